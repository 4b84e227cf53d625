use super::*;

#[test]
fn default_visibility_tables() {
    let g = Geometry::new(1920, 1080, 8, &CambiSettings::default()).unwrap();
    eprintln!(
        "{:?}",
        (
            &g.tvi[..4],
            g.vlt,
            g.band_base,
            g.band_size,
            g.window,
            g.mask_index
        )
    );
    let g = Geometry::new(1920, 1080, 10, &CambiSettings::vmaf_v1()).unwrap();
    eprintln!(
        "{:?}",
        (
            &g.tvi[..4],
            g.vlt,
            g.band_base,
            g.band_size,
            g.window,
            g.speedup,
            g.scales
        )
    );
}
