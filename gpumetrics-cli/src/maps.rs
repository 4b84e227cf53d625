//! `--map NAME:DIR`: each measured pair's distortion map (the element's `map`, exact values
//! from its record feed) written as a PFM file, `DIR/NAME-FRAME.pfm` with the frame number
//! zero-padded to six digits: little-endian grayscale (`Pf`, scale −1.0), 32-bit floats,
//! rows bottom to top, as the format has them (docs/METRICS.md, "Distortion maps").

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use gpumetrics_engine::map::{DistortionMap, MapKind};

/// What `--map` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct MapArg {
    pub kind: MapKind,
    pub dir: PathBuf,
}

/// clap's parser of `NAME:DIR`.
pub fn parse(text: &str) -> Result<MapArg, String> {
    let names = || {
        MapKind::ALL
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (name, dir) = text
        .split_once(':')
        .filter(|(_, d)| !d.is_empty())
        .ok_or_else(|| format!("`{text}` is not NAME:DIR (NAME one of {})", names()))?;
    let kind =
        MapKind::from_name(name).ok_or_else(|| format!("no map `{name}` (maps: {})", names()))?;
    Ok(MapArg {
        kind,
        dir: PathBuf::from(dir),
    })
}

/// The file of frame `frame`'s map.
pub fn path(dir: &Path, kind: MapKind, frame: u64) -> PathBuf {
    dir.join(format!("{}-{frame:06}.pfm", kind.name()))
}

/// The PFM bytes of `map`.
pub fn pfm(map: &DistortionMap) -> Vec<u8> {
    let mut out = format!("Pf\n{} {}\n-1.0\n", map.width, map.height).into_bytes();
    out.reserve(map.values.len() * 4);
    for row in map.values.chunks(map.width.max(1)).rev() {
        for v in row {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Writes frame `frame`'s map into `dir`.
pub fn write(dir: &Path, kind: MapKind, frame: u64, map: &DistortionMap) -> Result<()> {
    let p = path(dir, kind, frame);
    let mut f = std::fs::File::create(&p).with_context(|| format!("creating {}", p.display()))?;
    f.write_all(&pfm(map))
        .with_context(|| format!("writing {}", p.display()))
}

/// Makes `dir` (and its parents) for the maps, or says why it cannot be.
pub fn prepare(arg: &MapArg) -> Result<()> {
    std::fs::create_dir_all(&arg.dir).map_err(|e| {
        anyhow!(
            "--map {}: cannot create {}: {e}",
            arg.kind.name(),
            arg.dir.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_dirs_are_parsed_and_refused_with_the_choices() {
        assert_eq!(
            parse("ssim:/tmp/maps").unwrap(),
            MapArg {
                kind: MapKind::Ssim,
                dir: "/tmp/maps".into()
            }
        );
        assert_eq!(
            parse("squared-error:m").unwrap().kind,
            MapKind::SquaredError
        );
        let e = parse("dssim:/tmp").unwrap_err();
        assert!(e.contains("squared-error, ssim"), "{e}");
        assert!(parse("ssim").is_err());
        assert!(parse("ssim:").is_err());
    }

    #[test]
    fn pfm_is_little_endian_gray_bottom_row_first() {
        let m = DistortionMap {
            width: 2,
            height: 2,
            values: vec![1.0, 2.0, 3.0, 4.5],
        };
        let b = pfm(&m);
        let header = b"Pf\n2 2\n-1.0\n";
        assert_eq!(&b[..header.len()], header);
        let floats: Vec<f32> = b[header.len()..]
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(floats, [3.0, 4.5, 1.0, 2.0]);
        assert_eq!(
            path(Path::new("d"), MapKind::Ssim, 42),
            Path::new("d/ssim-000042.pfm")
        );
    }
}
