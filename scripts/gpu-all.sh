#!/usr/bin/env bash
# The one entry point for the GPU machine: every GPU check and benchmark of gpumetrics, as
# named steps. The machine has no Rust, no FFmpeg and no network (../shared/docs/GPU-MACHINE.md),
# so the script has two halves: `pack` on this machine, the steps there.
#
# 1. Here, from the repository root (release build; /.gpu/ is ignored by .gitignore):
#      scripts/gpu-all.sh pack [STEP...]
#    builds what the steps need and lays it out in .gpu/all: bin/ (test, bench and example
#    binaries, stripped, by scripts/gpu-pack.sh), plugin/libgstgpumetrics.so and gst/ (the
#    GStreamer runtime of ../shared/tools/gpu-kit) when a step uses GStreamer, build-root (the
#    tree the tests were built in: they read tests/data through it), and data/ with the inputs
#    of the steps packed, copied from .gpu/inputs/ (which pack fills where it can; see the
#    steps). No STEP: every step. The device tool carries 64 MiB in all (working tree
#    included), which every step at once exceeds: pack fails when too large. Calls that
#    fit, with every input made (about 57, 48, 50 and 49 MiB with the working tree, and 44
#    for the fifth, before vship: `pack vship` alone is 9 MiB, 22 with the working tree):
#      selftest psnr ssim butteraugli siti blur blockiness | vmaf throughput | ssimulacra2 element | cudamem colour cli
#      | cambi libvmaf32 vship (and blackfreeze nr libvmaf where their inputs are made)
# 2. There, with the device tool: `run` with carry [".gpu/all"] and the command
#      bash scripts/gpu-all.sh [STEP...]
#    (no STEP: the steps last packed; a step whose inputs were not packed says "skipped"). When
#    .gpu/all is too large to carry, pack leaves it as one xz archive too, .gpu/all.tar.xz
#    (binaries compress about five to one): carry [".gpu/all.tar.xz"] instead, and the
#    script unpacks it there (`pack-base` adds its bench to the archive). Each step prints
#    a "=== title" header; a failed command prints FAILED and the script goes on,
#    exiting 1 at the end. The whole output is also written to $OUT/gpu-all.log.
#    Record what it printed in docs/GPU-RUNS.md and docs/BENCHMARKS.md (newest run first).
#
# Steps (the per-metric ones: that metric's kernel checks under compute-sanitizer, its CUDA
# suite against the CPU backend, its element tests with backend=cuda, its throughput, ncu's
# time per kernel of one 1080p pair, and its comparisons with other implementations):
#   selftest     the toolchain's own kernels (cuda_kernels selftest::), every kernel has a check
#   psnr         cuda_kernels psnr::, cuda_vs_cpu, cuda_external, psnr_ffmpeg
#   ssim         cuda_kernels ssim::, cuda_ssim, ssim_reference, ssim_element; pytorch-msssim
#                on the same GPU when data/whl/ holds its wheel (pip download pytorch-msssim)
#   ssimulacra2  cuda_kernels ssimulacra2::, ssimulacra2_cuda (every colorimetry, device
#                memory), ssimulacra2_element, the crates on all cores (bench_crates)
#   butteraugli  cuda_kernels butteraugli::, butteraugli_cuda, butteraugli_element, the crate
#                on all cores; butteraugli_crate on device frames with the FFmpeg cache
#   siti         cuda_kernels siti:: (the kernels against the host, the CUDA engine against
#                the CPU engine over several frames), its throughput and ncu's kernel times
#   blackfreeze  cuda_kernels black:: and freeze:: (the kernels against the host, the CUDA
#                engine against the CPU engine, the freeze reference frame kept across
#                frames), black_freeze_ffmpeg on the CUDA backend with the FFmpeg cache,
#                their throughput and ncu's kernel times
#   inflight     cuda_kernels in_flight:: (two pairs in flight give the records of one at a
#                time), the throughput of the no-reference metrics and CAMBI with 1 and 2
#   ab           the throughput bench against that of another commit in the same call
#                (after pack: scripts/gpu-all.sh pack-base [REV]; variants too with
#                pack-base REV NAME; AB_METRICS, AB_ROUNDS;
#                AB_NCU: ncu's time per kernel of each)
#   profile      ncu's source-level profile of PROFILE_KERNELS in the throughput bench
#                (PROFILE_METRICS, PROFILE_SKIP), back as $OUT/profile.tar.gz; read it here
#                with scripts/ncu-source.py
#   streams      many engines in one process (engine bench streams): N = 1..32 engines, one
#                thread each, aggregate and per-engine pairs/s and device memory per engine,
#                for PSNR+SSIM+VMAF and all metrics (device and host frames), and the five
#                no-reference metrics on one input (N = 1, 2, 4: whether one engine is bound
#                by the device or by its host thread)
#   capacity     N = 1, 8, 16, 32 gpumetrics pipelines in one gst-launch on NVDEC inputs (the
#                monitor clips), start-up subtracted (each run to 900 and to 30 frames), for
#                the no-reference set, PSNR+SSIM+VMAF, VMAF v1, the six and the AOM CTC set;
#                the decoders alone and the engine alone in the same call: channels at
#                1080p30 and the share of the decoders' rate (issue 49; CAP_COUNTS, CAP_SETS,
#                CAP_FRAMES)
#   scaling      several GPUs (issue 50; skipped on one): the capacity pipelines of the six
#                and the no-reference set on GPU 0 and spread over every GPU, and the
#                command's four-file ladder with --device 0 and --device auto (SCALE_SETS,
#                SCALE_COUNTS, SCALE_LADDER; SCALE_GPUS=2 with CAP_DECODER, CAP_BACKEND to
#                try it without GPUs)
#   blur         cuda_kernels blur:: (the kernels against the host, exact; the CUDA engine
#                against the CPU engine), its throughput and ncu's kernel times
#   blockiness   cuda_kernels blockiness:: (the same, over sequences), its throughput, ncu
#   vmaf         cuda_kernels vmaf:: and speed::, vmaf_cuda, vmaf_element; vmaf_reference on the CUDA
#                backend with the FFmpeg cache; throughput of v0 and the v1 models, ncu
#   vmafcore     vmaf without GStreamer (no vmaf_element): packs small enough to go with cambi
#   cambi        cuda_kernels cambi:: (the CUDA engine against the CPU engine on banded
#                frames, every option), cambi_reference on the CUDA backend with the FFmpeg
#                cache, its throughput and ncu's kernel times
#   aomctc       the AOM CTC set (issue 44): cuda_kernels ssim:: (libvmaf's float SSIM and
#                MS-SSIM kernels against the host, the set's CUDA engine against the CPU
#                engine), aom_ctc_reference on the CUDA backend with the FFmpeg cache, the
#                throughput of aom-ctc
#   element      the element's suites with backend=cuda (element, harness, hardening,
#                cuda_context, no_gstcuda, reliability, monitoring, roi, in_flight, map_element), the latency
#                tracer, cpu-vs-cuda pipelines, bad property values,
#                cudaupload memory under memcheck
#   throughput   every metric and all together, 1080p and 2160p, device and host frames
#   cudamem      NVDEC zero-copy into the element (data/cudamem: pack makes the clips)
#   colour       NVDEC HEVC Main10 against the CPU backend (data/colour: pack makes the clips)
#   cli          the gpumetrics command on two 1080p files (data/cli: pack makes the clips)
#   monitor      gpumetrics monitor's capacity (MONITOR_NR, MONITOR_FR: channel counts;
#                MONITOR_SECONDS); with MONITOR_AL (channel counts) instead: PSNR+SSIM+VMAF
#                channels without and with align = "auto", and align=auto's cost per pair
#   maps         the distortion maps' kernels (cuda_kernels map::), map_reference on the CUDA
#                backend, and each map's cost in its metric's throughput (issue 48; the
#                element's map tests with backend=cuda, CUDA memory included, are in the
#                element step)
#   cvvdp        ColorVideoVDP and the distortion maps on the CUDA backend (issues 47, 48):
#                cvvdp_reference's and map_reference's CUDA tests (host copies of the pairs,
#                memcheck), cvvdp's throughput; Vship's CVVDP is in the vship step, the
#                butteraugli map on device frames in the butteraugli step (butteraugli_crate,
#                after `pack-ffmpeg-cache` made its new distortions' cache)
#   align        live alignment: cuda_kernels thumb::, the live UDP test (align) on NVDEC
#                frames with backend=cuda (its costs: monitor with MONITOR_AL)
#   libvmaf      libvmaf 3.1.0 built with CUDA there and timed (data/lv: laid out by hand,
#                see step_libvmaf)
#   libvmaf32    libvmaf 3.2.0's CPU tool (data/lv32/vmaf: built here by
#                tests/build_libvmaf_tool.sh, static, with its x86 asm) timed at 16 threads:
#                VMAF v1 3d0h and v0.6.1 at 1080p 10-bit, CAMBI alone
#   vship        Vship 4.0.2's C API (the GPU Butteraugli and SSIMULACRA2 of Av1an) built
#                there with nvcc (data/vship-src: pack exports it) and timed by
#                scripts/vship/vship_bench.c at 1080p (device, pinned and pageable frames, 8
#                handlers on 8 threads), then the engine's throughput and streams (8
#                engines) benches for the same two metrics in the same call
# Inputs (.gpu/inputs/NAME, copied to .gpu/all/data/NAME for the steps that use them):
#   cudamem, colour, cli  clips and their CPU-backend stats, made by pack when absent
#   ffmpeg-cache-vmaf.tar.xz, ffmpeg-cache-butteraugli.tar.xz  (vmaf, butteraugli) the
#                 FFmpeg outputs of vmaf_reference and butteraugli_crate, which the machine
#                 cannot make (11 and 4 MiB): `scripts/gpu-all.sh pack-ffmpeg-cache` runs those
#                 tests here with GPUMETRICS_FFMPEG_CACHE (engine/tests/common)
#   ffmpeg-cache-blackfreeze.tar.xz  (blackfreeze) the FFmpeg outputs of black_freeze_ffmpeg
#                 (1.5 MiB), made the same way; ffmpeg-cache-cambi.tar.xz (cambi) those of
#                 cambi_reference, ffmpeg-cache-aomctc.tar.xz (aomctc) those of
#                 aom_ctc_reference (11 MiB)
#   whl           (ssim) the pytorch-msssim wheel
#   lv            (libvmaf) laid out by hand, see step_libvmaf
#   lv32          (libvmaf32) the vmaf tool of libvmaf 3.2.0 (tests/build_libvmaf_tool.sh)
#   vship-src     (vship) Vship's src/, include/ and LICENSE at VSHIP_REV (default v4.0.2's
#                 commit, 0.6 MiB), exported by pack from a git copy of
#                 github.com/Line-fr/Vship (VSHIP_GIT: its git directory, default
#                 ../.mirror/Line-fr+Vship/repo, where the fetch tool puts it)
#   vship-lib     (vship, optional) a libvship.so built by an earlier run (the step writes it
#                 and its stamp to $OUT/vship-lib/): copied here, it spares the nvcc build
#
# Examples:
#   scripts/gpu-all.sh pack vmaf                  # here; then on the GPU machine:
#   bash scripts/gpu-all.sh vmaf                  # VMAF only
#   SKIP_SANITIZERS=1 SKIP_BENCH=1 bash scripts/gpu-all.sh   # correctness only, faster
# Variables: SKIP_SANITIZERS=1 (no compute-sanitizer), SANITIZERS="memcheck racecheck"
# (the tools for the kernel checks; default memcheck racecheck synccheck initcheck),
# SKIP_BENCH=1 (no throughput, crates, pytorch, ncu), BUILD_ROOT (default: .gpu/all/build-root),
# GPUMETRICS_KERNEL_SEED (cuda_kernels' random seed).
set -uo pipefail
cd "$(dirname "$0")/.."
d=.gpu/all
B=$d/bin
ALL_STEPS="selftest psnr ssim ssimulacra2 butteraugli siti blur blockiness blackfreeze nr inflight streams capacity scaling vmaf cambi aomctc element throughput cudamem colour cli monitor align cvvdp maps mapframes libvmaf libvmaf32 vship"
# Not in ALL_STEPS: ab (it needs `pack-base` after pack), profile (PROFILE_KERNELS).

# ---------------------------------------------------------------------------------------------
# Packing (this machine)

# The binaries of a step, as scripts/gpu-pack.sh specs.
bins() {
  local e=gpumetrics-engine g=gst-plugin-gpumetrics
  case $1 in
    selftest) echo $e:test:cuda_kernels ;;
    psnr) echo $e:test:cuda_kernels $e:test:cuda_vs_cpu $e:test:cuda_external $e:bench:throughput $g:test:psnr_ffmpeg ;;
    ssim) echo $e:test:cuda_kernels $e:test:cuda_ssim $e:test:ssim_reference $e:bench:throughput $g:test:ssim_element ;;
    ssimulacra2) echo $e:test:cuda_kernels $e:test:ssimulacra2_cuda $e:bench:throughput $e:example:bench_crates $g:test:ssimulacra2_element ;;
    butteraugli) echo $e:test:cuda_kernels $e:test:butteraugli_cuda $e:test:butteraugli_crate $e:bench:throughput $e:example:bench_crates $g:test:butteraugli_element ;;
    siti | blur | blockiness) echo $e:test:cuda_kernels $e:bench:throughput ;;
    blackfreeze) echo $e:test:cuda_kernels $e:test:black_freeze_ffmpeg $e:bench:throughput ;;
    nr) echo $e:bench:throughput $g:test:no_reference ;;
    inflight) echo $e:test:cuda_kernels $e:bench:throughput ;;
    ab | profile) echo $e:bench:throughput ;;
    streams) echo $e:bench:streams ;;
    capacity) echo $e:bench:throughput ;;
    scaling) echo gpumetrics-cli:bin:gpumetrics ;;
    vmaf) echo $e:test:cuda_kernels $e:test:vmaf_cuda $e:test:vmaf_reference $e:bench:throughput $g:test:vmaf_element ;;
    vmafcore) echo $e:test:cuda_kernels $e:test:vmaf_cuda $e:test:vmaf_reference $e:bench:throughput ;;
    cambi) echo $e:test:cuda_kernels $e:test:cambi_reference $e:bench:throughput ;;
    aomctc) echo $e:test:cuda_kernels $e:test:aom_ctc_reference $e:bench:throughput ;;
    element) echo $g:test:element $g:test:harness $g:test:hardening $g:test:cuda_context $g:test:no_gstcuda $g:test:reliability $g:test:monitoring $g:test:roi $g:test:in_flight $g:test:map_element ;;
    throughput) echo $e:bench:throughput ;;
    cli | monitor) echo gpumetrics-cli:bin:gpumetrics ;;
    align) echo $e:test:cuda_kernels $g:test:align ;;
    cvvdp) echo $e:test:cvvdp_reference $e:test:map_reference $e:bench:throughput $e:test:cuda_kernels ;;
    maps) echo $e:test:cuda_kernels $e:test:map_reference $e:bench:throughput $e:example:map_copy ;;
    mapframes) echo $g:test:map_element ;;
    vship) echo $e:bench:throughput $e:bench:streams ;;
    cudamem | colour | libvmaf | libvmaf32) ;;
    *) echo "gpu-all: unknown step '$1' (steps: $ALL_STEPS)" >&2; exit 2 ;;
  esac
}

# The inputs of a step (folders of .gpu/inputs).
inputs() {
  case $1 in
    cudamem | colour | cli | monitor) echo "$1" ;;
    capacity | scaling) echo monitor ;;
    ssim) echo whl ;;
    butteraugli | vmaf | blackfreeze | cambi | aomctc) echo "ffmpeg-cache-$1.tar.xz" ;;
    vmafcore) echo ffmpeg-cache-vmaf.tar.xz ;;
    libvmaf) echo lv ;;
    libvmaf32) echo lv32 ;;
    vship) echo vship-src vship-lib ;;
  esac
}

# Whether a step runs GStreamer (the plugin and the kit are packed for it).
uses_gst() { case $1 in selftest | ab | profile | throughput | cvvdp | maps | libvmaf | libvmaf32 | blackfreeze | cambi | aomctc | vmafcore | inflight | streams | siti | blur | blockiness | vship) return 1 ;; *) return 0 ;; esac; }

pack() {
  set -e
  local steps=("$@") specs=() s gst=0
  # The GStreamer plugins of the kit: what the element tests and the videotestsrc pipelines
  # use (a lean kit, 18 MiB); decoding files adds gpu-kit's defaults, cudamem openh264.
  local plugins="coreelements coretracers videotestsrc videoconvertscale videorate app nvcodec"
  [ ${#steps[@]} -gt 0 ] || read -ra steps <<<"$ALL_STEPS"
  for s in "${steps[@]}"; do bins "$s" >/dev/null; done
  for s in "${steps[@]}"; do
    read -ra more <<<"$(bins "$s")"
    specs+=("${more[@]}")
    if uses_gst "$s"; then gst=1; fi
    case $s in
      cudamem | colour | cli | capacity | scaling | monitor)
        plugins="$plugins debug playback typefindfunctions matroska isomp4 videoparsersbad rawparse"
        plugins="$plugins y4mdec png pbtypes" ;;
    esac
    # The channels' live senders and receivers: MPEG-TS over UDP.
    [ "$s" = monitor ] && plugins="$plugins udp mpegtsdemux mpegtsmux"
    case $s in capacity | scaling) plugins="$plugins mpegtsdemux" ;; esac
    # The live alignment test's sender and receivers.
    [ "$s" = align ] && plugins="$plugins udp mpegtsdemux mpegtsmux x264 videotestsrc app videoparsersbad"
    [ "$s" = cudamem ] && plugins="$plugins openh264"
    # roi compares the element's rectangle with videocrop's.
    [ "$s" = element ] && plugins="$plugins videocrop"
  done
  mkdir -p $d
  rm -rf $B $d/plugin $d/gst $d/data
  if [ ${#specs[@]} -gt 0 ]; then
    read -ra specs <<<"$(printf '%s\n' "${specs[@]}" | sort -u | tr '\n' ' ')"
    scripts/gpu-pack.sh $B "${specs[@]}"
  fi
  if [ $gst = 1 ]; then
    local lib=${CARGO_TARGET_DIR:-target}/release/libgstgpumetrics.so
    cargo build --release -p gst-plugin-gpumetrics
    mkdir -p $d/plugin
    cp "$lib" $d/plugin/ && strip $d/plugin/libgstgpumetrics.so
    # The element test binaries link libgstcheck and friends: the kit takes their libraries.
    local extra
    extra=$(ls $B/*_element $B/element $B/harness $B/hardening $B/cuda_context $B/no_gstcuda \
      $B/reliability $B/monitoring $B/roi $B/psnr_ffmpeg $B/no_reference $B/gpumetrics 2>/dev/null | tr '\n' ' ' || true)
    read -ra plugins <<<"$(printf '%s\n' $plugins | sort -u | tr '\n' ' ')"
    EXTRA="$extra" PLUGINS="${PLUGINS:-${plugins[*]}}" ../shared/tools/gpu-kit $d/gst
  fi
  # The rust-kernels example (build-support's README): another project's kernel crate
  # launched through the typed launchers; selftest runs it on the GPU.
  if printf '%s\n' "${steps[@]}" | grep -qx selftest; then
    mkdir -p $B
    cargo build --release --quiet --manifest-path examples/rust-kernels/host/Cargo.toml \
      --target-dir "${CARGO_TARGET_DIR:-target}/rust-kernels-example"
    cp "${CARGO_TARGET_DIR:-target}/rust-kernels-example/release/rust-kernels-example" $B/
    strip $B/rust-kernels-example
  fi
  pwd >$d/build-root
  echo "${steps[*]}" >$d/steps
  # Inputs: made in .gpu/inputs where a script can make them, then copied in for the steps
  # packed (only those travel).
  local in=.gpu/inputs name
  for s in "${steps[@]}"; do
    case $s in
      cudamem) [ -f $in/cudamem/avdec.jsonl ] || make_cudamem_clips $in/cudamem ;;
      colour) [ -f $in/colour/pq-cpu.jsonl ] || scripts/make-colour-clips.sh $in/colour ;;
      cli) [ -f $in/cli/dist.mp4 ] || make_cli_clips $in/cli ;;
      monitor | capacity) [ -f $in/monitor/dist.ts ] || make_monitor_clips $in/monitor ;;
      vship) [ "$(cat $in/vship-src/COMMIT 2>/dev/null)" = "$VSHIP_REV" ] || make_vship_src $in/vship-src ;;
    esac
    for name in $(inputs "$s"); do
      if [ -e $d/data/$name ]; then
        :
      elif [ -e $in/$name ]; then
        mkdir -p $d/data && cp -r $in/$name $d/data/
      else
        echo "gpu-all: no $in/$name: step $s runs without it (see the header)"
      fi
    done
  done
  # The device tool carries at most 64 MiB: the working tree that travels (tracked and
  # untracked, not ignored files) and the carried folders together.
  local tree packed
  tree=$( (git ls-files -z; git ls-files -z -o --exclude-standard) | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  packed=$(du -sb $d | cut -f1)
  echo "gpu-all: $d is $((packed / 1048576)) MiB, the working tree $((tree / 1048576)) MiB" \
    "(the device tool carries 64 MiB in all); steps: ${steps[*]}"
  rm -f .gpu/all.tar.xz
  if [ $((packed + tree)) -gt $((64 * 1048576)) ]; then
    # Binaries compress about five to one: one xz archive may fit where the folder does not.
    tar -cf - -C .gpu all | xz -T0 -6 >.gpu/all.tar.xz
    packed=$(stat -c %s .gpu/all.tar.xz)
    if [ $((packed + tree)) -gt $((64 * 1048576)) ]; then
      rm -f .gpu/all.tar.xz
      echo "gpu-all: too large for one call, even as .gpu/all.tar.xz: pack fewer steps per call (the header lists a split)" >&2
      exit 1
    fi
    echo "gpu-all: carry .gpu/all.tar.xz ($((packed / 1048576)) MiB) instead of .gpu/all: the steps unpack it there"
  fi
}

# cudamem's clips: x264 constrained-baseline 1080p30, 10 s of moving SMPTE bars (with a time
# overlay where GStreamer has pango), 4000 (reference) and 800 (distorted) kbit/s in MP4, and
# the stats of their comparison decoded by avdec_h264 on the CPU backend here, for the GPU
# run to equal.
make_cudamem_clips() {
  local dir=$1 c rate overlay=""
  mkdir -p "$dir"
  # The recorded runs' clips had a time overlay (pango); without it the bars still move.
  gst-inspect-1.0 timeoverlay >/dev/null 2>&1 && overlay="timeoverlay !"
  GST_PLUGIN_PATH=$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)
  export GST_PLUGIN_PATH
  for c in ref dist; do
    rate=4000; [ $c = dist ] && rate=800
    gst-launch-1.0 -q videotestsrc pattern=smpte horizontal-speed=7 num-buffers=300 ! \
      video/x-raw,width=1920,height=1080,framerate=30/1,format=I420 ! $overlay \
      x264enc speed-preset=veryfast key-int-max=60 bitrate=$rate ! \
      video/x-h264,profile=constrained-baseline ! mp4mux ! filesink location="$dir/$c.mp4"
  done
  gst-launch-1.0 -q \
    filesrc location="$dir/ref.mp4" ! parsebin ! avdec_h264 ! queue ! m.ref_sink \
    filesrc location="$dir/dist.mp4" ! parsebin ! avdec_h264 ! queue ! m.dist_sink \
    gpumetrics name=m backend=cpu stats-file="$dir/avdec.jsonl" ! fakesink
  ls -l "$dir"
}

# monitor's clips: 50 s (what fits the device tool's 64 MiB beside the kit) of FFmpeg's testsrc2, 1080p30, x264 in MPEG-TS at 1000 (reference)
# and 400 (distorted) kbit/s, a key frame a second, what a channel's sender replays live.
make_monitor_clips() {
  local dir=$1 c rate
  mkdir -p "$dir"
  for c in ref dist; do
    rate=1000k; [ $c = dist ] && rate=400k
    ffmpeg -hide_banner -v error -y -f lavfi -i testsrc2=size=1920x1080:rate=30 -t 50 \
      -pix_fmt yuv420p -c:v libx264 -preset veryfast -g 30 -b:v $rate -maxrate $rate \
      -bufsize $rate -f mpegts "$dir/$c.ts"
  done
  ls -l "$dir"
}

# cli's clips: 150 frames of FFmpeg's testsrc2, 1080p30, x264 crf 16 and 800 kbit/s.
make_cli_clips() {
  local dir=$1
  mkdir -p "$dir"
  ffmpeg -hide_banner -v error -y -f lavfi -i testsrc2=size=1920x1080:rate=30 -frames:v 150 \
    -pix_fmt yuv420p -c:v libx264 -preset veryfast -crf 16 "$dir/ref.mp4"
  ffmpeg -hide_banner -v error -y -f lavfi -i testsrc2=size=1920x1080:rate=30 -frames:v 150 \
    -pix_fmt yuv420p -c:v libx264 -preset veryfast -b:v 800k "$dir/dist.mp4"
  ls -l "$dir"
}

# Vship's source at VSHIP_REV, only what the build of src/VshipLib.cpp reads (src/, include/:
# VapourSynth's headers, LICENSE), from a git copy of github.com/Line-fr/Vship.
VSHIP_REV=${VSHIP_REV:-4748f9227f690f06adab8b2d808ee5dd2c292296} # tag v4.0.2
make_vship_src() {
  local dir=$1 git=${VSHIP_GIT:-../.mirror/Line-fr+Vship/repo}
  if ! git --git-dir="$git" cat-file -e "$VSHIP_REV^{commit}" 2>/dev/null; then
    echo "gpu-all: no Vship commit $VSHIP_REV in $git (VSHIP_GIT: a git directory of github.com/Line-fr/Vship)"
    return 0
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  git --git-dir="$git" archive "$VSHIP_REV" src include LICENSE | tar -x -C "$dir"
  echo "$VSHIP_REV" >"$dir/COMMIT"
  echo "gpu-all: $dir: Vship $VSHIP_REV ($(du -sh "$dir" | cut -f1))"
}

case ${1:-} in
  pack) shift; pack "$@"; exit ;;
  pack-base)
    # The throughput bench of another commit (default HEAD), for the step `ab`: built in a
    # temporary worktree with a target directory of its own (target/base: Cargo hashes path
    # crates relative to their workspace, so sharing this tree's would mix the two trees'
    # build-script outputs, the kernel crate's location among them), copied to
    # bin/throughput-base, or with a NAME (`pack-base REV NAME`: a variant, e.g. one of
    # several kernel changes measured in one call) to bin/throughput-NAME, which `ab` runs
    # too. Pack the steps first: pack empties bin/.
    set -e
    rev=${2:-HEAD}
    name=${3:-base}
    case $name in *[!a-z0-9_]*) echo "pack-base: NAME is lower-case letters, digits and _" >&2; exit 2 ;; esac
    wt=$(mktemp -d)/base
    git worktree add --detach -q "$wt" "$rev"
    trap 'git worktree remove --force "$wt"' EXIT
    target=$PWD/target/base
    exe=$(cd "$wt" && CARGO_TARGET_DIR=$target cargo bench --no-run -p gpumetrics-engine \
      --bench throughput --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "throughput":
        print(m["executable"])')
    mkdir -p $B
    cp "$exe" $B/throughput-$name && strip $B/throughput-$name
    echo "$(git rev-parse --short "$rev")" >$B/throughput-$name.rev
    echo "gpu-all: $B/throughput-$name is the throughput bench of $(cat $B/throughput-$name.rev)"
    # A pack carried as an archive gets the bench too.
    if [ -f .gpu/all.tar.xz ]; then tar -cf - -C .gpu all | xz -T0 -6 >.gpu/all.tar.xz; fi
    exit ;;
  pack-ffmpeg-cache)
    set -e
    mkdir -p .gpu/inputs
    for t in vmaf:vmaf_reference butteraugli:butteraugli_crate blackfreeze:black_freeze_ffmpeg cambi:cambi_reference aomctc:aom_ctc_reference; do
      cache=$(mktemp -d)
      GPUMETRICS_FFMPEG_CACHE=$cache cargo test --release -p gpumetrics-engine --test "${t#*:}"
      tar -cJf ".gpu/inputs/ffmpeg-cache-${t%%:*}.tar.xz" -C "$cache" .
      rm -rf "$cache"
    done
    ls -l .gpu/inputs/ffmpeg-cache-*.tar.xz
    exit ;;
esac

# ---------------------------------------------------------------------------------------------
# Steps (the GPU machine)

out=${OUT:-/tmp}
exec > >(tee "$out/gpu-all.log") 2>&1
# A pack carried as one archive (pack made it when the folder was too large): unpack it.
if [ -f .gpu/all.tar.xz ] && [ ! -d $d ]; then
  tar -xJf .gpu/all.tar.xz -C .gpu
fi
BUILD_ROOT=${BUILD_ROOT:-$(cat $d/build-root 2>/dev/null || echo /work/main)}
# The tests read their data through the tree they were built in: link it to this one.
[ -e "$BUILD_ROOT" ] || { mkdir -p "$(dirname "$BUILD_ROOT")" && ln -s "$PWD" "$BUILD_ROOT"; }
export PATH=$PATH:/usr/local/cuda/bin
export GST_DEBUG_NO_COLOR=1
if [ -f $d/gst/env.sh ]; then
  source $d/gst/env.sh
  export GST_PLUGIN_PATH=$PWD/$d/plugin
fi

fail=0
step() { echo; echo "=== $*"; }
# run COMMAND...: runs it; a failure is printed and recorded, and the script goes on.
run() { "$@" || { echo "FAILED ($?): $*"; fail=1; }; }
# need FILE...: whether every file was packed (binaries, plugin, kit); a missing one fails.
need() {
  local f
  for f in "$@"; do
    [ -e "$f" ] || { echo "FAILED: $f was not packed (scripts/gpu-all.sh pack ${current:-})"; fail=1; return 1; }
  done
}
# have FILE...: whether the optional inputs are there; otherwise says what is skipped.
have() {
  local f
  for f in "$@"; do
    [ -e "$f" ] || { echo "skipped: no $f (see the header of scripts/gpu-all.sh)"; return 1; }
  done
}
bench() { [ -z "${SKIP_BENCH:-}" ]; }
# sanitize TOOLS COMMAND...: COMMAND under each compute-sanitizer tool in TOOLS.
sanitize() {
  local tools=$1 tool
  shift
  [ -n "${SKIP_SANITIZERS:-}" ] && return 0
  command -v compute-sanitizer >/dev/null || { echo "FAILED: no compute-sanitizer"; fail=1; return 0; }
  for tool in $tools; do
    step "compute-sanitizer $tool: ${*#"$B"/}"
    run compute-sanitizer --tool "$tool" --error-exitcode 9 "$@"
  done
}
# kernels MODULE: MODULE's checks of cuda_kernels (every kernel against the host build of the
# same code; one row per check), then under compute-sanitizer.
kernels() {
  need $B/cuda_kernels || return 0
  step "$1 kernels against the host build (cuda_kernels --ignored $1::)"
  run $B/cuda_kernels --ignored --test-threads 1 --nocapture "$1::"
  sanitize "${SANITIZERS:-memcheck racecheck synccheck initcheck}" \
    $B/cuda_kernels --ignored --test-threads 1 "$1::"
}
# element_tests NAME...: the element's test binaries with backend=cuda, their GPU-only
# (#[ignore]d) tests included.
element_tests() {
  local t
  for t in "$@"; do
    need $B/$t $d/gst/env.sh || continue
    step "element tests ($t) with backend=cuda"
    GPUMETRICS_TEST_BACKEND=cuda run $B/$t --include-ignored --test-threads 2
  done
}
# throughput METRICS: pairs/s at 1080p and 2160p, frames in GPU memory and in system memory.
throughput() {
  bench && need $B/throughput || return 0
  step "throughput of $1 (frames in GPU memory and in system memory)"
  run $B/throughput --seconds 2 --no-cpu --sizes 1080p,2160p --metrics "$1"
}
# ffmpeg_cache NAME: unpacks data/ffmpeg-cache-NAME.tar.xz and prints its folder, if packed.
ffmpeg_cache() {
  local f=$d/data/ffmpeg-cache-$1.tar.xz dir=/tmp/ffmpeg-cache-$1
  [ -f "$f" ] || { echo "skipped: no $f (scripts/gpu-all.sh pack-ffmpeg-cache)" >&2; return 1; }
  mkdir -p $dir && tar -xJf "$f" -C $dir && echo $dir
}
# ncu_kernels REGEX COUNT METRIC [NCU_METRICS]: ncu's time of each kernel of one 1080p pair.
ncu_kernels() {
  bench && need $B/throughput || return 0
  command -v ncu >/dev/null || { echo "skipped: no ncu"; return 0; }
  step "ncu: the $1 kernels of one 1080p pair ($3)"
  ncu --clock-control none -k "regex:$1" -c "$2" --metrics "${4:-gpu__time_duration.sum}" \
    $B/throughput --seconds 0.05 --sizes 1080p --no-cpu --metrics "$3" 2>&1 |
    grep -E "^  $1|gpu__time|dram__|sm__|launch__" | head -80
}

step_selftest() {
  need $B/cuda_kernels || return 0
  step "every kernel has a check, every check a kernel (cuda_kernels, no GPU needed)"
  run $B/cuda_kernels --test-threads 1
  kernels selftest
  need $B/rust-kernels-example || return 0
  step "examples/rust-kernels: another crate's kernels through gpumetrics-build's launchers"
  local out
  out=$($B/rust-kernels-example 2>&1) || true
  echo "$out"
  grep -q "equal the CPU's bit for bit" <<<"$out" || { echo FAILED: rust-kernels-example; fail=1; }
}

step_siti() {
  kernels siti
  throughput siti
  ncu_kernels siti_ 4 siti
}

step_blackfreeze() {
  kernels black
  kernels freeze
  local cache
  if cache=$(ffmpeg_cache blackfreeze) && need $B/black_freeze_ffmpeg; then
    step "black and freeze on the CUDA backend vs FFmpeg 5.1 (black_freeze_ffmpeg, cached FFmpeg outputs)"
    GPUMETRICS_FFMPEG_CACHE=$cache run $B/black_freeze_ffmpeg --ignored --nocapture --test-threads 1
  fi
  throughput black,freeze
  ncu_kernels "(black|freeze)_" 4 black,freeze
}

# The no-reference metrics together: the element on dist_sink alone and with both inputs
# (backend=cuda), and their throughput at 1080p on one input and next to the full-reference
# metrics (the issue's table: what each adds).
step_nr() {
  element_tests no_reference
  bench && need $B/throughput || return 0
  local rows=no-reference,full-reference m
  for m in siti black freeze blur blockiness; do rows="$rows,$m,full-reference+$m"; done
  step "throughput of the no-reference metrics, one input and both, 1080p"
  run $B/throughput --seconds 2 --no-cpu --sizes 1080p --metrics "$rows"
}

# Pairs in flight (EngineBuilder::in_flight): two in flight score as one at a time
# (cuda_kernels in_flight::), then the throughput of the metrics that queue ahead with one
# and two pairs in flight, at 1080p, and of the full-reference set (which does not gain).
step_inflight() {
  need $B/cuda_kernels || return 0
  step "pairs in flight score as one at a time (cuda_kernels --ignored in_flight::)"
  run $B/cuda_kernels --ignored --test-threads 1 --nocapture "in_flight::"
  bench && need $B/throughput || return 0
  local five=blur+blockiness+siti+black+freeze
  local rows=$five,no-reference,cambi,siti,black,freeze,blur,blockiness
  step "throughput with 1, 2 and 4 pairs in flight, 1080p"
  run $B/throughput --seconds 2 --no-cpu --sizes 1080p --metrics "$rows" --in-flight 1,2,4
  step "throughput of the full-reference metrics and VMAF v1 with 1 and 4 pairs in flight, 1080p"
  run $B/throughput --seconds 2 --no-cpu --sizes 1080p --in-flight 1,4 \
    --metrics "full-reference,full-reference+$five,vmaf vmaf_v1.0.16_3d0h"
  ncu_kernels "(blur|blockiness|siti|black|freeze)_" 10 "$five" gpu__time_duration.sum
  # What bounds each: throughput of the SMs, L1, L2 and DRAM, occupancy and the top stalls.
  command -v ncu >/dev/null && {
    step "ncu: what bounds the five's kernels (speed of light, occupancy, warp stalls)"
    ncu --clock-control none -k "regex:(blur|blockiness|siti|black|freeze)_" -c 10 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
      $B/throughput --seconds 0.05 --sizes 1080p --no-cpu --metrics "$five" --in-flight 1 2>&1 |
      grep -E "^  [a-z_]+|Duration|Throughput|Occupancy|Registers|Shared Memory Config|Grid Size|Block Size|Stall|cycles being stalled|One or More Eligible" |
      grep -v "^    ---" | head -200
  }
  # Where a frame's time goes on the host (CUDA API calls) and on the device, when nsys is there.
  command -v nsys >/dev/null || { echo "skipped: no nsys"; return 0; }
  step "nsys: CUDA API and kernel time of the five no-reference metrics, one input, 2 in flight"
  nsys profile -q -o /tmp/gpumetrics-nr --force-overwrite true \
    $B/throughput --seconds 0.5 --no-cpu --sizes 1080p --metrics "$five" --in-flight 2 >/dev/null 2>&1
  nsys stats -q --report cuda_api_sum,cuda_gpu_kern_sum --format csv /tmp/gpumetrics-nr.nsys-rep 2>&1 |
    cut -c1-160 | head -60
}

# A/B in one call: the throughput bench of the working tree against that of another commit
# (bin/throughput-base, `scripts/gpu-all.sh pack-base REV` after pack), interleaved, each
# AB_ROUNDS times (default 2), over AB_METRICS (default the five no-reference metrics and
# siti) at 1080p with 2 and 4 pairs in flight: rows of this size move by a few per cent
# between calls, so a change is judged against its base in the same call. Variants packed
# with `pack-base REV NAME` run after the working tree's, in each round.
# With AB_NCU=REGEX:ONCE:PER[:EXTRA] (e.g. cvvdp_:cvvdp_base:1:1), ncu's time per kernel
# of every binary too (`ncu_table`: kernels matching REGEX, pairs counted by ONCE's
# launches, PER of them a pair and EXTRA more), over the first metric set of AB_METRICS.
step_ab() {
  bench && need $B/throughput $B/throughput-base || return 0
  local metrics=${AB_METRICS:-blur+blockiness+siti+black+freeze,siti} i bin f
  local bins=(throughput-base throughput)
  for f in $B/throughput-*.rev; do
    f=$(basename "$f" .rev)
    [ "$f" = throughput-base ] || [ ! -x "$B/$f" ] || bins+=("$f")
  done
  # What a binary is: the working tree or a commit.
  what() { [ "$1" = throughput ] && echo "working tree" || echo "${1#throughput-} $(cat "$B/$1.rev")"; }
  for i in $(seq "${AB_ROUNDS:-2}"); do
    for bin in "${bins[@]}"; do
      step "ab round $i: $bin ($(what $bin))"
      run $B/$bin --seconds 2 --no-cpu --sizes 1080p --metrics "$metrics" --in-flight 2,4
    done
  done
  [ -n "${AB_NCU:-}" ] || return 0
  command -v ncu >/dev/null || { echo "skipped: no ncu"; return 0; }
  local regex=${AB_NCU%%:*} rest=${AB_NCU#*:}
  for bin in "${bins[@]}"; do
    step "ab: ncu per kernel, $bin ($(what $bin)), ${metrics%%,*}"
    ncu --clock-control none -k "regex:$regex" -c 400 --metrics gpu__time_duration.sum --csv \
      $B/$bin --seconds 0.05 --sizes 1080p --no-cpu --metrics "${metrics%%,*}" 2>/dev/null |
      ncu_table "${rest%%:*}" "${rest#*:}" || echo "FAILED: ncu $bin"
  done
}

# Not in ALL_STEPS: ncu's source-level profile of kernels, for scripts/ncu-source.py here.
# PROFILE_KERNELS (kernel names, each NAME or NAME@SKIP), PROFILE_METRICS (the throughput
# bench's metric set) and PROFILE_SKIP (launches of each kernel skipped first where its
# name gives none; default 2: past a first pair's extra work). Each kernel's launch gets ncu's SpeedOfLight, Occupancy, LaunchStats,
# WarpStateStats, InstructionStats and SourceCounters; the SASS source pages and the
# details come back as one archive, $OUT/profile.tar.gz (the device tool returns a few
# files only).
step_profile() {
  bench && need $B/throughput || return 0
  command -v ncu >/dev/null || { echo "skipped: no ncu"; return 0; }
  [ -n "${PROFILE_KERNELS:-}" ] || { echo "skipped: no PROFILE_KERNELS"; return 0; }
  local dir=/tmp/gpumetrics-profile k skip
  rm -rf $dir && mkdir -p $dir
  for k in $PROFILE_KERNELS; do
    skip=${PROFILE_SKIP:-2}
    case $k in *@*) skip=${k#*@} k=${k%@*} ;; esac
    step "profile: $k (launch $skip skipped first), ${PROFILE_METRICS:-cvvdp} at 1080p"
    if ! timeout 300 ncu -k "regex:^$k\$" -s "$skip" -c 1 --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats \
      --section SourceCounters -o $dir/$k $B/throughput --seconds 0.05 --sizes 1080p --no-cpu \
      --metrics "${PROFILE_METRICS:-cvvdp}" >/dev/null 2>&1; then
      echo "FAILED: ncu profile of $k"; fail=1; continue
    fi
    ncu -i $dir/$k.ncu-rep --page source --print-source sass --csv >$dir/$k-source.csv 2>&1
    ncu -i $dir/$k.ncu-rep --page details --csv >$dir/$k-details.csv 2>&1
    python3 -c '
import csv, sys
want = ("Duration", "Executed Instructions", "DRAM Throughput", "Compute (SM) Throughput",
        "Registers Per Thread", "Theoretical Occupancy", "Achieved Occupancy")
for r in csv.reader(open(sys.argv[1])):
    if len(r) > 14 and r[12] in want:
        print(f"{r[12]}: {r[14]} {r[13]}")' $dir/$k-details.csv
  done
  tar -czf "$out/profile.tar.gz" -C "$(dirname $dir)" "$(basename $dir)"
  echo "\$OUT/profile.tar.gz: $(du -h "$out/profile.tar.gz" | cut -f1) (scripts/ncu-source.py FILE-source.csv)"
}

# cap_wall N INPUTS ELEMENT FRAMES [GPUS]: the wall seconds of N pipelines of INPUTS inputs
# (1: distorted only), into `gpumetrics ELEMENT` (none: the decoders alone, into
# fakesinks). With GPUS > 1, pipeline i runs on GPU i mod GPUS: its decoders are that
# GPU's (nvh264dec is GPU 0's, nvh264deviceKdec GPU K's) and its element has device-id K.
# Reads c, decoder and backend of the calling step.
cap_wall() {
  local n=$1 inputs=$2 element=$3 k=$4 gpus=${5:-1} launch=() i t0 t1 clip dev dec el
  for i in $(seq 0 $((n - 1))); do
    dev=$((i % gpus)) dec=$decoder el=$element
    if [ "$gpus" -gt 1 ]; then
      [ $dev = 0 ] || [ "$decoder" != nvh264dec ] || dec=nvh264device${dev}dec
      el="$element device-id=$dev"
    fi
    for clip in dist ref; do
      [ $clip = ref ] && [ "$inputs" = 1 ] && continue
      launch+=(filesrc location=$c/$clip.ts ! tsdemux ! h264parse ! $dec ! identity eos-after=$k ! queue)
      if [ "$element" = none ]; then
        launch+=(! fakesink sync=false)
      else
        launch+=(! m$i.${clip}_sink)
      fi
    done
    # shellcheck disable=SC2206 # the element's properties are words
    [ "$element" = none ] || launch+=(gpumetrics name=m$i backend=$backend $el ! fakesink sync=false)
  done
  t0=$(date +%s.%N)
  gst-launch-1.0 -q "${launch[@]}" >/dev/null 2>&1 || { echo "FAILED" >&2; return 1; }
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
# cap_rate N INPUTS ELEMENT [GPUS]: pairs (or frames, per pipeline) per second, start-up
# out (each run to `frames` and to 30 frames).
cap_rate() {
  local long short
  long=$(cap_wall "$1" "$2" "$3" $frames "${4:-1}") || return 1
  short=$(cap_wall "$1" "$2" "$3" 30 "${4:-1}") || return 1
  python3 -c "print($1 * ($frames - 30) / max($long - $short, 1e-3))"
}
# The element properties and inputs of a capacity set: sets `element`, `inputs`, `row`.
cap_set() {
  case $1 in
    nr) element="metrics=blur+blockiness+siti+black+freeze"; inputs=1; row="blur+blockiness+siti+black+freeze" ;;
    fr3) element="metrics=psnr+ssim+vmaf"; inputs=2; row="psnr+ssim+vmaf" ;;
    vmafv1) element="metrics=vmaf vmaf-model=vmaf_v1.0.16_3d0h"; inputs=2; row="vmaf vmaf_v1.0.16_3d0h" ;;
    six) element="metrics=psnr+ssim+ms-ssim+ssimulacra2+butteraugli+vmaf"; inputs=2; row="psnr+ssim+ms-ssim+ssimulacra2+butteraugli+vmaf" ;;
    aomctc) element="metrics=aom-ctc"; inputs=2; row="aom-ctc" ;;
    *) echo "FAILED: capacity: no set $1 (nr fr3 vmafv1 six aomctc)"; fail=1; return 1 ;;
  esac
}

# Capacity where users run it (issue 49): N = 1, 8, 16, 32 `gpumetrics` pipelines (CAP_COUNTS)
# in one gst-launch on NVDEC inputs (the monitor step's 1080p30 H.264 clips, 1,500 frames),
# each set of metrics (CAP_SETS: nr, fr3, vmafv1, six, aomctc): every pipeline run twice, to
# CAP_FRAMES (default 900) and to 30 frames (`identity eos-after`), so that start-up drops
# out: pairs/s = N · (CAP_FRAMES − 30) / (wall − wall of 30). In the same call, the decoders
# alone (the same pipelines without gpumetrics, 1 or 2 inputs each) and the engine alone
# (the throughput bench, 1080p device frames, 2 pairs in flight): channels at 1080p30 per
# GPU (pairs/s / 30) and the share of the decoders' rate the pipelines reach. CAP_DECODER
# and CAP_BACKEND (default nvh264dec, cuda) let a machine without a GPU try the step
# (avdec_h264, cpu).
step_capacity() {
  local c=$d/data/monitor n set frames=${CAP_FRAMES:-900}
  local decoder=${CAP_DECODER:-nvh264dec} backend=${CAP_BACKEND:-cuda}
  need $d/gst/env.sh $d/plugin/libgstgpumetrics.so || return 0
  have $c/ref.ts $c/dist.ts || return 0
  bench || return 0
  gst-inspect-1.0 nvh264dec >/dev/null 2>&1 || true
  local counts=${CAP_COUNTS:-1 8 16 32}
  declare -A dec
  step "capacity: the decoders alone, N pipelines of 1 and 2 nvh264dec (pipelines/s · frames)"
  echo "| pipelines | inputs | pipeline frames/s (start-up out) |"
  echo "| --- | --- | --- |"
  for n in $counts; do
    for inputs in 1 2; do
      dec[$n.$inputs]=$(cap_rate $n $inputs none) || { echo "FAILED: decoders $n x $inputs"; fail=1; dec[$n.$inputs]=0; }
      python3 -c "print(f'| $n | $inputs | {${dec[$n.$inputs]}:,.0f} |')"
    done
  done
  local engine_rows=()
  for set in ${CAP_SETS:-nr fr3 vmafv1 six aomctc}; do
    local element inputs row
    cap_set "$set" || continue
    engine_rows+=("$row")
    step "capacity: $element, N pipelines on NVDEC inputs ($inputs per pipeline), 1080p30"
    echo "| set | pipelines | pairs/s in all | channels at 30 fps | decoders alone | share of the decoders' rate |"
    echo "| --- | --- | --- | --- | --- | --- |"
    for n in $counts; do
      local r
      r=$(cap_rate $n $inputs "$element") || { echo "| $set | $n | FAILED | | | |"; fail=1; continue; }
      python3 -c "r=$r; dec=${dec[$n.$inputs]:-0}; print(f'| $set | $n | {r:,.0f} | {r/30:.1f} | {dec:,.0f} | ' + (f'{100*r/dec:.0f} %' if dec else '-') + ' |')"
    done
  done
  if need $B/throughput; then
    step "capacity: the engine alone, the same sets (1080p device frames, 2 pairs in flight)"
    local IFS=,
    run $B/throughput --seconds 2 --no-cpu --sizes 1080p --in-flight 2 --metrics "${engine_rows[*]}"
  fi
}

# Several GPUs (issue 50): the capacity pipelines of step `capacity` for the six and the
# no-reference set (SCALE_SETS), N = SCALE_COUNTS (default 16 32) pipelines on GPU 0 alone
# and spread over every GPU (pipeline i on GPU i mod G, its NVDEC decoders included), in
# the same call; and the command's ladder, one reference against four distorted files
# (the capacity clip four times), with --device 0 and with --device auto (the elements
# spread over the GPUs, the reference decoded once). Prints the aggregate rates and the
# scaling (issue 50 asks ≥ 1.9× for the sets and ≥ 1.8× for the ladder from one GPU to
# two). On one GPU it says so and skips. To try the step on a machine without GPUs:
# SCALE_GPUS=2 CAP_DECODER=avdec_h264 CAP_BACKEND=cpu (the command then decodes in software
# on the CPU backend).
step_scaling() {
  local c=$d/data/monitor frames=${CAP_FRAMES:-900}
  local decoder=${CAP_DECODER:-nvh264dec} backend=${CAP_BACKEND:-cuda} gpus n set
  local decode=nvdec
  [ "$backend" = cuda ] || decode=software
  need $d/gst/env.sh $d/plugin/libgstgpumetrics.so || return 0
  have $c/ref.ts $c/dist.ts || return 0
  bench || return 0
  gpus=${SCALE_GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
  if [ "${gpus:-0}" -lt 2 ]; then
    echo "skipped: scaling needs two or more GPUs; this machine has ${gpus:-0}"
    return 0
  fi
  nvidia-smi -L 2>/dev/null || true
  for set in ${SCALE_SETS:-six nr}; do
    local element inputs row
    cap_set "$set" || continue
    step "scaling: $element, N pipelines on NVDEC inputs, on GPU 0 and over $gpus GPUs"
    echo "| set | pipelines | pairs/s, GPU 0 | pairs/s, $gpus GPUs | scaling |"
    echo "| --- | --- | --- | --- | --- |"
    for n in ${SCALE_COUNTS:-16 32}; do
      local one all
      one=$(cap_rate $n $inputs "$element" 1) || { echo "| $set | $n | FAILED | | |"; fail=1; continue; }
      all=$(cap_rate $n $inputs "$element" "$gpus") || { echo "| $set | $n | ${one%.*} | FAILED | |"; fail=1; continue; }
      python3 -c "a=$one; b=$all; print(f'| $set | $n | {a:,.0f} | {b:,.0f} | {b/a:.2f}x |')"
    done
  done
  if need $B/gpumetrics; then
    local set=${SCALE_LADDER:-psnr+ssim+ms-ssim+ssimulacra2+butteraugli+vmaf} dev t0 t1 out
    local ladder=() i files
    # Four distinct names of the clip (the command refuses a file given twice).
    files=$(mktemp -d)
    for i in 1 2 3 4; do ln -s "$(realpath $c/dist.ts)" "$files/dist$i.ts"; ladder+=("$files/dist$i.ts"); done
    step "scaling: gpumetrics REF DIST×4 --metrics $set, --device 0 and --device auto ($gpus GPUs)"
    echo "| --device | wall s | pairs/s in all | header devices |"
    echo "| --- | --- | --- | --- |"
    declare -A wall
    for dev in 0 auto; do
      out=$(mktemp -d)
      t0=$(date +%s.%N)
      if $B/gpumetrics --metrics "$set" --backend $backend --decode $decode --device $dev -f jsonl -o "$out/r.jsonl" \
        "$c/ref.ts" "${ladder[@]}" >"$out/table" 2>"$out/err"; then
        t1=$(date +%s.%N)
        wall[$dev]=$(python3 -c "print($t1 - $t0)")
        python3 - "$out/r.jsonl" "${wall[$dev]}" "$dev" <<'PY'
import json, sys
path, wall, dev = sys.argv[1], float(sys.argv[2]), sys.argv[3]
recs = [json.loads(line) for line in open(path)]
frames = sum(r["type"] == "frame" for r in recs)
header = next(r for r in recs if r["type"] == "header")
print(f"| {dev} | {wall:.2f} | {frames / wall:,.0f} | {header.get('devices')} |")
PY
      else
        echo "| $dev | FAILED | | |"; sed 's/^/    /' "$out/err" | tail -5; fail=1
      fi
    done
    [ -n "${wall[0]:-}" ] && [ -n "${wall[auto]:-}" ] && \
      python3 -c "print(f'ladder: --device auto is {${wall[0]}/${wall[auto]}:.2f}x faster than --device 0 (wall, start-up included)')"
  fi
}

# gpumetrics monitor's capacity: N channels of live 1080p30 H.264 MPEG-TS over loopback UDP
# (one sender per input, replaying monitor's clips at their own pace), decoded by NVDEC and
# measured on the GPU in one service process, for the no-reference set (distorted only) and
# for PSNR+SSIM+VMAF (with the reference); per N: the channels up, each channel's pairs per
# second over the steady windows (30 keeps up), and the service's CPU use per channel; and
# the decoders' own rate in the same call (N nvh264dec decoding the clip as fast as they can
# in one gst-launch).
step_monitor() {
  local c=$d/data/monitor n set i
  need $B/gpumetrics $d/gst/env.sh || return 0
  have $c/ref.ts $c/dist.ts || return 0
  bench || return 0
  [ -n "${SKIP_DECODERS:-}${MONITOR_AL:-}" ] || step "monitor: the decoders' own rate, N nvh264dec on the 1080p30 clip in one gst-launch (900 frames each)"
  [ -n "${SKIP_DECODERS:-}${MONITOR_AL:-}" ] || echo "| decoders | wall s | frames/s in all | frames/s each |"
  [ -n "${SKIP_DECODERS:-}${MONITOR_AL:-}" ] || echo "| --- | --- | --- | --- |"
  local counts="16 32 48"
  [ -z "${SKIP_DECODERS:-}${MONITOR_AL:-}" ] || counts=""
  for n in $counts; do
    local launch=() t0 t1
    for i in $(seq 1 $n); do
      launch+=(filesrc location=$c/dist.ts ! tsdemux ! h264parse ! nvh264dec ! identity eos-after=900 ! fakesink sync=false)
    done
    t0=$(date +%s.%N)
    gst-launch-1.0 -q "${launch[@]}" >/dev/null 2>&1 || { echo "FAILED: $n decoders"; fail=1; continue; }
    t1=$(date +%s.%N)
    python3 -c "w=$t1-$t0; print(f'| $n | {w:.2f} | {900*$n/w:,.0f} | {900/w:,.0f} |')"
  done
  monitor_run() { # set channels with_reference [align]
    local set=$1 n=$2 refs=$3 aligned=${4:-} dir port pids=() cfg out i
    dir=$(mktemp -d)
    cfg=$dir/monitor.toml
    printf '[defaults]\nbackend = "cuda"\ndecode = "nvdec"\nwindow = "1s"\nsignal-timeout = "10s"\nmetrics = "%s"\n' "$set" >$cfg
    port=$((20000 + RANDOM % 20000))
    # A sender replaying clip $1 live to the next port, named in the channel as key $2.
    send() {
      printf '%s = "udp://127.0.0.1:%d"\n' "$2" $port >>$cfg
      gst-launch-1.0 -q filesrc location=$c/$1.ts ! tsdemux ! h264parse config-interval=-1 ! \
        mpegtsmux ! udpsink host=127.0.0.1 port=$port sync=true >/dev/null 2>&1 &
      pids+=($!)
      port=$((port + 1))
    }
    for i in $(seq 1 $n); do
      printf '[[channel]]\nname = "c%d"\n' $i >>$cfg
      if [ -n "$aligned" ]; then printf 'align = "auto"\n' >>$cfg; fi
      send dist distorted
      if [ "$refs" = 1 ]; then send ref reference; fi
    done
    sleep 1
    out=$dir/events.jsonl
    # MONITOR_SECONDS (default 45), then SIGINT; the service's CPU time from the kernel's
    # accounting of the child.
    python3 - "$B/gpumetrics" "$cfg" "$out" "$dir/err" "$dir/time" <<'PY'
import resource, signal, subprocess, sys, time
exe, cfg, out, err, times = sys.argv[1:]
t = time.time()
p = subprocess.Popen([exe, "monitor", cfg], stdout=open(out, "w"), stderr=open(err, "w"))
time.sleep(float(__import__("os").environ.get("MONITOR_SECONDS", "45")))
p.send_signal(signal.SIGINT)
try:
    p.wait(60)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(times, "w").write(f"{r.ru_utime} {r.ru_stime} {time.time() - t}")
PY
    kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null
    # No channel up: what the service and the events said.
    if ! grep -q '"event":"up"' $out; then
      echo "monitor: no channel came up; its stderr and first events:"
      tail -n 20 $dir/err; head -n 8 $out
      fail=1
    fi
    python3 - "$out" "$dir/time" "$set${aligned:+ align}" "$n" <<'PY'
import json, sys, collections
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
user, system, wall = map(float, open(sys.argv[2]).read().split()[-3:])
up = {e["channel"] for e in events if e["event"] == "up"}
start = min((e["time"] for e in events if e["event"] == "started"), default=None)
last_up = max((e["time"] for e in events if e["event"] == "up"), default=None)
def secs(t):
    h, m, s = t[11:-1].split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)
all_up = f"{secs(last_up) - secs(start):.1f} s" if start and last_up and len(up) == int(sys.argv[4]) else "-"
down = {e["channel"] for e in events if e["event"] == "down"}
windows = collections.defaultdict(list)
for e in events:
    if e["event"] == "window":
        windows[e["channel"]].append(e["pairs"])
# The steady windows: from the third of each channel, less its last (cut by the stop).
rates = [sum(w[2:-1]) / len(w[2:-1]) for w in windows.values() if len(w) > 3]
steady = [len(w) - 3 for w in windows.values() if len(w) > 3]
n = int(sys.argv[4])
if rates:
    print(f"| {sys.argv[3]} | {n} | {len(up)} | {all_up} | {len(down)} | {min(steady)}–{max(steady)} | "
          f"{sum(rates)/len(rates):.1f} | {min(rates):.1f} | {sum(rates):,.0f} | "
          f"{100*(user+system)/wall/n:.1f} % |")
else:
    print(f"| {sys.argv[3]} | {n} | {len(up)} | {all_up} | {len(down)} | - | - | - | - | - |")
# Where pairs went (on stderr, beside the table): the channels' summaries at the stop, and
# their alignment changes.
tot = collections.Counter()
for e in events:
    if e["event"] == "summary":
        for k in ("pairs", "unmatched_ref", "unmatched_dist", "unaligned"):
            tot[k] += e.get(k, 0)
    if e["event"] == "align":
        tot["align " + str(e.get("state"))] += 1
print(f"  ({sys.argv[3]}, {n} channels: " + ", ".join(f"{k} {v}" for k, v in sorted(tot.items())) + ")",
      file=sys.stderr)
PY
    # The events come back with the run (OUT/monitor-SET[-align]-N.jsonl, the metrics joined by -): the alignment
    # changes' running times say when and why a lock was lost.
    cp $out "${OUT:-/tmp}/monitor-${set//,/-}${aligned:+-align}-$n.jsonl" 2>/dev/null || true
    rm -rf $dir
  }
  # GStreamer's registry once, before dozens of senders and the service start at once (each
  # would scan the plugins, nvcodec's probe of the GPU included, at the same time: the first
  # run of 24 channels then saw no channel up within its 45 s).
  gst-inspect-1.0 nvh264dec >/dev/null 2>&1 || true
  step "monitor: N channels of live 1080p30 over UDP, NVDEC, one gpumetrics monitor"
  echo "| metrics | channels | up | all up after | went down | steady windows | pairs/s per channel (mean) | slowest channel | pairs/s in all | CPU per channel |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  if [ -n "${MONITOR_AL:-}" ]; then
    # Live alignment's cost (issue 46): the same channels without and with align = "auto".
    for n in $MONITOR_AL; do
      monitor_run psnr,ssim,vmaf $n 1
      monitor_run psnr,ssim,vmaf $n 1 align
    done
    [ "${ALIGN_COST:-1}" = 0 ] || align_cost
    return 0
  fi
  for n in ${MONITOR_NR:-16 32 48}; do monitor_run blur,blockiness,black,freeze $n 0; done
  for n in ${MONITOR_FR:-8 16}; do monitor_run psnr,ssim,vmaf $n 1; done
}


# Live alignment (issue 46): the thumbnail kernel under the sanitizers and the live UDP
# test with NVDEC (CUDA memory into the element: thumbnails on the GPU, backend=cuda). Its
# costs are measured by the step monitor with MONITOR_AL (align_cost, monitor_run).
step_align() {
  kernels thumb
  need $B/align $d/gst/env.sh || return 0
  step "align: the live test on NVDEC frames (GPU thumbnails), backend=cuda"
  GPUMETRICS_TEST_BACKEND=cuda GPUMETRICS_TEST_DECODER=nvh264dec run $B/align --nocapture
}

step_cvvdp() {
  kernels cvvdp
  if need $B/cvvdp_reference $B/map_reference; then
    step "cvvdp on the CUDA backend vs ColorVideoVDP 0.5.7's values (cvvdp_reference)"
    run $B/cvvdp_reference --ignored --nocapture the_cuda_backend
    sanitize memcheck $B/cvvdp_reference --ignored the_cuda_backend
    step "distortion maps on the CUDA backend vs scikit-image (map_reference)"
    run $B/map_reference --ignored --nocapture the_cuda_backend
    sanitize memcheck $B/map_reference --ignored the_cuda_backend
  fi
  throughput cvvdp
  throughput psnr+ssim+ms-ssim+ssimulacra2+butteraugli+vmaf+cvvdp
  ncu_cvvdp
}

# The distortion maps on the GPU (issue 48): the map kernels against the host build
# (cuda_kernels map::, sanitizers), map_reference's CUDA test (the maps against
# scikit-image's and the crate's), and each map's cost: the throughput of its metric
# without and with the map (1080p, 2 pairs in flight; the bound: at most 10 % lower), the
# map used as a heat frame in device memory (src in CUDA memory), its statistics alone, a
# heat frame on the host, its values on the host (throughput's --map-use).
step_maps() {
  kernels map
  if need $B/map_reference; then
    step "distortion maps on the CUDA backend vs scikit-image (map_reference)"
    run $B/map_reference --ignored --nocapture the_cuda_backend
    sanitize memcheck $B/map_reference --ignored the_cuda_backend
  fi
  if need $B/map_copy; then
    step "maps: a 1080p map's way to the host, part by part (map_copy)"
    run $B/map_copy 200
  fi
  bench && need $B/throughput || return 0
  local pair
  for pair in "ssim ssim" "psnr squared-error" "psnr+ssim+vmaf ssim" "butteraugli butteraugli" "ssimulacra2 ssimulacra2" "cvvdp cvvdp"; do
    read -r metrics kind <<<"$pair"
    step "maps: $metrics without and with map=$kind (1080p, 2 pairs in flight), each use of the map"
    run $B/throughput --seconds 2 --no-cpu --sizes 1080p --in-flight 2 --metrics "$metrics"
    local use
    for use in frame stats host-frame values; do
      run $B/throughput --seconds 2 --no-cpu --sizes 1080p --in-flight 2 --metrics "$metrics" --map "$kind" --map-use $use
    done
  done
  ncu_maps
}

# ncu's time per kernel of a 1080p pair with each map (the map's kernels among the
# metric's), counted per pair by the metric's kernel that runs once a pair (MAP_PAIR_KERNEL).
ncu_maps() {
  bench && need $B/throughput || return 0
  command -v ncu >/dev/null || { echo "skipped: no ncu"; return 0; }
  local spec metrics kind once
  for spec in "ssim ssim map_stats" "psnr squared-error map_stats" "ssimulacra2 ssimulacra2 map_stats"; do
    read -r metrics kind once <<<"$spec"
    step "ncu: the kernels of a 1080p pair of $metrics with map=$kind, drawn as heat frames (time per kernel name)"
    ncu --clock-control none -c 300 --metrics gpu__time_duration.sum --csv \
      $B/throughput --seconds 0.05 --sizes 1080p --no-cpu --in-flight 1 --metrics "$metrics" \
      --map "$kind" --map-use frame 2>/dev/null | ncu_table "$once" 1 || echo "FAILED: ncu maps $metrics"
  done
  # What bounds the two costliest map kernels: ncu's speed of light, pipes and occupancy.
  for spec in "ssim ssim map_ssim" "ssimulacra2 ssimulacra2 ssimu2_map_scale"; do
    read -r metrics kind once <<<"$spec"
    step "ncu: what bounds $once (1080p, one launch)"
    ncu --clock-control none -k "$once" -s 2 -c 1 --section SpeedOfLight \
      --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
      $B/throughput --seconds 0.05 --sizes 1080p --no-cpu --in-flight 1 --metrics "$metrics" \
      --map "$kind" --map-use stats 2>/dev/null | grep -vE "^==PROF==|^\| " | sed -n '/Section/,$p' | head -80
  done
}

# The map frames on src with backend=cuda (issue 48): map_element's tests (both styles,
# system memory and CUDA memory, the heat frames drawn by the GPU straight into the
# frame's CUDA memory), then a pipeline drawing heat frames into CUDA memory for
# cudadownload under compute-sanitizer memcheck.
step_mapframes() {
  element_tests map_element
  need $d/gst/env.sh $d/plugin/libgstgpumetrics.so || return 0
  [ -n "${SKIP_SANITIZERS:-}" ] && return 0
  step "compute-sanitizer memcheck: map=ssim map-style=heat into cudadownload (1080p, backend=cuda)"
  run timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 gst-launch-1.0 -q \
    videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=1920,height=1080 ! tee name=t \
    t. ! queue ! m.ref_sink t. ! queue ! videoscale ! video/x-raw,width=960,height=540 ! videoscale ! \
    video/x-raw,width=1920,height=1080 ! m.dist_sink \
    gpumetrics name=m backend=cuda metrics=psnr map=ssim map-style=heat ! cudadownload ! \
    video/x-raw,format=RGBA ! fakesink
}

# ncu_table KERNEL LAUNCHES[:EXTRA]: ncu's CSV of gpu__time_duration.sum on stdin as a
# table of time per kernel name per pair, the pairs counted as (KERNEL's launches − EXTRA)
# / LAUNCHES (a kernel that runs LAUNCHES times a pair, EXTRA more in all: cvvdp_base runs
# once a pass, and the first pair has two; KERNEL_* counts as KERNEL).
ncu_table() {
  python3 -c '
import csv, sys, collections
once = sys.argv[1]
per, extra = (int(p) for p in (sys.argv[2] + ":0").split(":")[:2])
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith("\""))]
head, rows = rows[0], rows[1:]
k, v = head.index("Kernel Name"), head.index("Metric Value")
t, n = collections.Counter(), collections.Counter()
for r in rows:
    name = r[k].split("(")[0]
    t[name] += float(r[v].replace(",", ""))
    n[name] += 1
pairs = max(1, (sum(c for name, c in n.items() if name == once or name.startswith(once + "_")) - extra) // per)
print(f"{len(rows)} kernels, {pairs} pairs; per pair:")
print("| kernel | launches | µs |")
print("| --- | --- | --- |")
for name, ns in t.most_common():
    print(f"| {name} | {n[name] / pairs:.1f} | {ns / 1000 / pairs:.1f} |")
print(f"| all | {sum(n.values()) / pairs:.1f} | {sum(t.values()) / 1000 / pairs:.1f} |")
# Per launch shape (a kernel launched per level has one row per level): the median past
# the first two launches, the steady state. A small grid that takes as long as a large
# one is bound by the latency of one thread, not by the GPU.
if "Grid Size" in head:
    g, shapes = head.index("Grid Size"), collections.defaultdict(list)
    for r in rows:
        shapes[(r[k].split("(")[0], r[g])].append(float(r[v].replace(",", "")) / 1000)
    print()
    print("| kernel | grid | launches | median µs |")
    print("| --- | --- | --- | --- |")
    for (name, grid), us in sorted(shapes.items()):
        steady = sorted(us[2:] if len(us) > 4 else us)
        print(f"| {name} | {grid} | {len(us)} | {steady[len(steady) // 2]:.1f} |")
' "$@"
}

# ncu's time per cvvdp kernel over the first pairs of the 1080p throughput run (the
# first pair has the image pass too), summed per kernel name.
ncu_cvvdp() {
  bench && need $B/throughput || return 0
  command -v ncu >/dev/null || { echo "skipped: no ncu"; return 0; }
  step "ncu: the cvvdp kernels of the first 1080p pairs, time per kernel name"
  ncu --clock-control none -k "regex:cvvdp_" -c 400 --metrics gpu__time_duration.sum --csv \
    $B/throughput --seconds 0.05 --sizes 1080p --no-cpu --metrics cvvdp 2>/dev/null |
    ncu_table cvvdp_base 1:1 || echo "FAILED: ncu cvvdp"
}

# The cost of align=auto per pair at 1080p: monitor's two clips through NVDEC into one
# element as fast as they go, align none then auto, twice, in one call.
align_cost() {
  local c=$d/data/monitor set mode t0 t1 w none
  local pairs=1500 # monitor's clips: 50 s at 30 fps
  step "align: cost per pair at 1080p ($pairs NVDEC pairs, backend=cuda, align=none then auto)"
  echo "| metrics | align | wall s | pairs/s | cost per pair |"
  echo "| --- | --- | --- | --- | --- |"
  for set in psnr psnr+ssim+vmaf; do
    for mode in none auto none auto; do
      t0=$(date +%s.%N)
      gst-launch-1.0 -q filesrc location=$c/ref.ts ! tsdemux ! h264parse ! nvh264dec ! m.ref_sink \
        filesrc location=$c/dist.ts ! tsdemux ! h264parse ! nvh264dec ! m.dist_sink \
        gpumetrics name=m backend=cuda align=$mode metrics=$set ! fakesink sync=false \
        >/dev/null 2>&1 || { echo "FAILED: align=$mode $set"; fail=1; continue; }
      t1=$(date +%s.%N)
      w=$(python3 -c "print($t1-$t0)")
      [ $mode = none ] && none=$w
      python3 -c "w=$w; n=$none; d=(w-n)/$pairs*1e6; print(f'| $set | $mode | {w:.2f} | {$pairs/w:,.0f} | ' + (f'{d:+.0f} µs' if '$mode'=='auto' else '-') + ' |')"
    done
  done
}

step_streams() {
  bench && need $B/streams || return 0
  step "streams: the five no-reference metrics on one input, 1, 2 and 4 engines (threads), device frames"
  run $B/streams --seconds 2 --engines 1,2,4 --frames device --in-flight 2 \
    --sets dist:blur+blockiness+siti+black+freeze
  step "streams: N engines in one process, 1080p, PSNR+SSIM+VMAF and all metrics"
  run $B/streams --seconds 2 --engines 1,2,4,8,16,32 --frames device,host --sets psnr+ssim+vmaf,all
}

step_blur() {
  kernels blur
  throughput blur
  ncu_kernels blur_ 6 blur
}

step_blockiness() {
  kernels blockiness
  throughput blockiness
  ncu_kernels blockiness_ 6 blockiness
}

step_psnr() {
  kernels psnr
  if need $B/cuda_vs_cpu; then
    step "PSNR: CUDA vs CPU, every format pair and size, host and device frames (cuda_vs_cpu)"
    run $B/cuda_vs_cpu --ignored --nocapture --test-threads 1
    sanitize memcheck $B/cuda_vs_cpu --ignored device_frames
  fi
  if need $B/cuda_external; then
    step "the engine in an external CUDA context, device and host frames (cuda_external)"
    run $B/cuda_external --ignored --test-threads 1
  fi
  element_tests psnr_ffmpeg
  throughput psnr
  ncu_kernels psnr_sse 5 psnr gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
}

step_ssim() {
  kernels ssim
  if need $B/cuda_ssim; then
    step "SSIM, MS-SSIM: CUDA vs CPU, every format (cuda_ssim)"
    run $B/cuda_ssim --ignored --nocapture --test-threads 1
    sanitize memcheck $B/cuda_ssim --ignored device_frames
  fi
  if need $B/ssim_reference; then
    step "SSIM, MS-SSIM on the CUDA backend vs scikit-image and pytorch-msssim (ssim_reference)"
    run $B/ssim_reference --ignored --nocapture cuda_
  fi
  element_tests ssim_element
  throughput ssim,ms-ssim
  if bench && ls $d/data/whl/*.whl >/dev/null 2>&1; then
    step "pytorch-msssim on the same GPU"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
      $d/data/whl/*.whl && PYTHONPATH=/tmp/site run python3 scripts/bench_pytorch_msssim.py --seconds 1
  fi
  ncu_kernels ssim_scale 5 ms-ssim gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active
}

step_ssimulacra2() {
  kernels ssimulacra2
  if need $B/ssimulacra2_cuda; then
    step "SSIMULACRA2: device memory of one 1080p engine (alone in its process)"
    run $B/ssimulacra2_cuda --ignored --nocapture device_memory_at_1080p
    step "SSIMULACRA2: CUDA vs CPU, every format and size, every colorimetry, device frames"
    run $B/ssimulacra2_cuda --ignored --nocapture --test-threads 1 cuda_matches_cpu
    sanitize memcheck $B/ssimulacra2_cuda --ignored --test-threads 1 cuda_matches_cpu
    sanitize racecheck $B/ssimulacra2_cuda --ignored every_colorimetry
  fi
  element_tests ssimulacra2_element
  throughput ssimulacra2
  if bench && need $B/bench_crates; then
    step "the ssimulacra2 and fast-ssim2 crates on all cores, same machine"
    run $B/bench_crates 2 ssimulacra2
  fi
  ncu_kernels ssimu2 8 ssimulacra2
}

step_butteraugli() {
  kernels butteraugli
  if need $B/butteraugli_cuda; then
    step "Butteraugli: device memory per engine (alone in its process)"
    run $B/butteraugli_cuda --ignored --nocapture device_memory
    step "Butteraugli: CUDA vs CPU, 8x8 to 2160p, host and device frames"
    run $B/butteraugli_cuda --ignored --nocapture cuda_matches_cpu
    BUTTERAUGLI_MAX_SIDE=257 sanitize "memcheck racecheck synccheck" \
      $B/butteraugli_cuda --ignored cuda_matches_cpu
  fi
  local cache
  if cache=$(ffmpeg_cache butteraugli) && need $B/butteraugli_crate; then
    step "Butteraugli on device frames vs the butteraugli crate (butteraugli_crate, cached FFmpeg outputs)"
    GPUMETRICS_FFMPEG_CACHE=$cache BUTTERAUGLI_BACKEND=cuda \
      run $B/butteraugli_crate --nocapture --test-threads 1
  fi
  element_tests butteraugli_element
  throughput butteraugli
  if bench && need $B/bench_crates; then
    step "the butteraugli crate on all cores, same machine"
    run $B/bench_crates 3 butteraugli
  fi
  ncu_kernels ba_ 29 butteraugli
}

step_vmaf() {
  step_vmafcore
  element_tests vmaf_element
}

# vmaf's steps without GStreamer (a smaller pack, e.g. with cambi in the same call).
step_vmafcore() {
  kernels vmaf
  kernels speed
  if need $B/vmaf_cuda; then
    step "VMAF: CUDA vs CPU on synthetic sequences, host and device frames (equal records)"
    run $B/vmaf_cuda --ignored --nocapture
  fi
  local cache
  if cache=$(ffmpeg_cache vmaf) && need $B/vmaf_reference; then
    step "VMAF on the CUDA backend vs libvmaf's vmaf tool (vmaf_reference, cached FFmpeg outputs)"
    GPUMETRICS_FFMPEG_CACHE=$cache GPUMETRICS_TEST_BACKEND=cuda \
      run $B/vmaf_reference --nocapture --test-threads 1
  fi
  if bench && need $B/throughput; then
    step "throughput of vmaf and the v1 models (frames in GPU memory and in system memory)"
    run $B/throughput --seconds 2 --no-cpu --sizes 1080p,2160p --metrics \
      "vmaf,vmaf vmaf_v1.0.16_3d0h,vmaf vmaf_v1.0.16_hfr_3d0h"
  fi
  ncu_kernels "vmaf|speed|cambi" 60 "vmaf vmaf_v1.0.16_3d0h"
}

step_cambi() {
  kernels cambi
  local cache
  if cache=$(ffmpeg_cache cambi) && need $B/cambi_reference; then
    step "CAMBI on the CUDA backend vs libvmaf's vmaf tool (cambi_reference, cached FFmpeg outputs)"
    GPUMETRICS_FFMPEG_CACHE=$cache GPUMETRICS_TEST_BACKEND=cuda \
      run $B/cambi_reference --nocapture --test-threads 1
  fi
  throughput cambi
  ncu_kernels cambi_ 40 cambi
}

step_aomctc() {
  # ssim:: has the float SSIM kernels' check and the set's engine check.
  kernels ssim
  local cache
  if cache=$(ffmpeg_cache aomctc) && need $B/aom_ctc_reference; then
    step "aom-ctc on the CUDA backend vs libvmaf's vmaf --aom_ctc v7.0 (aom_ctc_reference, cached FFmpeg outputs)"
    GPUMETRICS_FFMPEG_CACHE=$cache GPUMETRICS_TEST_BACKEND=cuda \
      run $B/aom_ctc_reference --nocapture --test-threads 1
  fi
  throughput aom-ctc
}

step_element() {
  need $d/gst/env.sh $d/plugin/libgstgpumetrics.so || return 0
  step "plugin"
  gst-inspect-1.0 gpumetrics | grep -E "Long-name|Version" || fail=1
  element_tests element harness hardening cuda_context no_gstcuda reliability monitoring roi in_flight map_element
  if need $B/hardening; then
    step "the CUDA-memory hardening cases (GPU-only: they fail without cudaupload or CUDA)"
    GPUMETRICS_TEST_BACKEND=cuda run $B/hardening --include-ignored --test-threads 1 --nocapture cuda_memory
    GPUMETRICS_TEST_BACKEND=cuda sanitize memcheck $B/hardening --include-ignored --test-threads 1 refused
  fi
  step "pipelines: backend=cpu vs backend=cuda give identical stats files"
  local fmt b
  for fmt in I420 NV12 I420_10LE P010_10LE BGRx; do
    for b in cpu cuda; do
      gst-launch-1.0 -q \
        videotestsrc pattern=zone-plate kx2=20 ky2=20 kt=1 num-buffers=30 ! video/x-raw,format=$fmt,width=640,height=360 ! tee name=t \
        t. ! queue ! m.ref_sink \
        t. ! queue ! videoscale ! video/x-raw,width=320,height=180 ! videoscale ! video/x-raw,width=640,height=360 ! queue ! m.dist_sink \
        gpumetrics name=m backend=$b stats-file=$out/pipe-$fmt-$b.jsonl ! fakesink || fail=1
    done
    if cmp -s $out/pipe-$fmt-cpu.jsonl $out/pipe-$fmt-cuda.jsonl; then
      echo "$fmt: identical stats ($(wc -l <$out/pipe-$fmt-cpu.jsonl) records)"
    else
      echo "$fmt: DIFFERENT"; diff $out/pipe-$fmt-cpu.jsonl $out/pipe-$fmt-cuda.jsonl | head -5; fail=1
    fi
  done
  step "latency added by the element with and without monitoring (GST_TRACERS=latency, backend=cuda)"
  BACKEND=cuda run bash scripts/latency.sh $d/plugin
  step "pairing-tolerance=-5 and 2^64-2 (refused with a message, no panic)"
  local v
  for v in -5 18446744073709551614; do
    gst-launch-1.0 -q videotestsrc num-buffers=3 ! video/x-raw,width=64,height=48 ! tee name=t \
      t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
      gpumetrics name=m backend=cuda pairing-tolerance=$v ! fakesink 2>&1 | head -3
    echo "exit status: ${PIPESTATUS[0]}"
  done
  [ -n "${SKIP_SANITIZERS:-}" ] && return 0
  step "compute-sanitizer memcheck: cudaupload (pitched CUDA memory, 1080p NV12) into backend=cuda"
  run timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 gst-launch-1.0 -q \
    videotestsrc num-buffers=20 ! video/x-raw,format=NV12,width=1920,height=1080 ! tee name=t \
    t. ! queue ! cudaupload ! m.ref_sink t. ! queue ! cudaupload ! m.dist_sink \
    gpumetrics name=m backend=cuda ! fakesink
}

step_throughput() {
  bench && need $B/throughput || return 0
  step "throughput of every metric and of all together (frames in GPU memory and in system memory)"
  run $B/throughput --seconds 2 --no-cpu --sizes 1080p,2160p
}

step_cudamem() {
  local c=$d/data/cudamem
  need $d/gst/env.sh $d/plugin/libgstgpumetrics.so || return 0
  have $c/ref.mp4 $c/dist.mp4 $c/avdec.jsonl || return 0
  gst-inspect-1.0 nvh264dec | grep -E "Long-name" || fail=1
  # compare NAME BACKEND REF_DECODE DIST_DECODE: stats into $out/NAME.jsonl (equal to
  # avdec_h264 + backend=cpu), the element's INFO log (backend, contexts, memory counters).
  compare() {
    local name=$1 backend=$2
    GST_DEBUG=gpumetrics:4 gst-launch-1.0 -q \
      filesrc location=$c/ref.mp4 ! parsebin ! $3 ! queue ! m.ref_sink \
      filesrc location=$c/dist.mp4 ! parsebin ! $4 ! queue ! m.dist_sink \
      gpumetrics name=m backend=$backend stats-file=$out/$name.jsonl ! fakesink 2>&1 |
      grep -E "using backend|CUDA context|frames read|copied to the host|ERROR" | sed -e 's/.*:<m> /  /'
    if cmp -s $out/$name.jsonl $c/avdec.jsonl; then
      echo "$name: stats identical to avdec_h264 + backend=cpu ($(wc -l <$out/$name.jsonl) records)"
    else
      echo "$name: stats DIFFER from avdec_h264 + backend=cpu"
      diff <(head -3 $out/$name.jsonl) <(head -3 $c/avdec.jsonl); fail=1
    fi
  }
  # `cudadownload` passes CUDA memory through when downstream accepts it (as gpumetrics
  # does): a plain video/x-raw filter after it makes system memory.
  step "NVDEC (CUDA memory on both pads) into backend=cuda: zero-copy"
  compare nvdec cuda nvh264dec nvh264dec
  step "NVDEC + cudadownload (system memory) into backend=cuda"
  compare nvdec-download cuda "nvh264dec ! cudadownload ! video/x-raw" "nvh264dec ! cudadownload ! video/x-raw"
  step "mixed: ref_sink CUDA memory, dist_sink system memory"
  compare mixed cuda nvh264dec "nvh264dec ! cudadownload ! video/x-raw"
  step "CPU decoding (openh264dec) into backend=cuda"
  compare openh264 cuda "h264parse ! openh264dec" "h264parse ! openh264dec"
  step "NVDEC into backend=cpu (CUDA memory mapped for the CPU: counted downloads)"
  compare nvdec-cpu cpu nvh264dec nvh264dec
  step "NVDEC into backend=auto"
  compare nvdec-auto auto nvh264dec nvh264dec
  step "monitoring on NVDEC frames: window, alerts, subsample, roi (backend=cuda) = openh264dec + backend=cpu"
  local mon="window=500000000 alerts=psnr-y<40:200ms,psnr-y>45 subsample=2 roi=640,360,960,540"
  local how dec backend
  for how in "mon-nvdec cuda nvh264dec" "mon-cpu cpu h264parse!openh264dec"; do
    read -r name backend dec <<<"$how"
    dec=${dec//!/ ! }
    gst-launch-1.0 -q \
      filesrc location=$c/ref.mp4 ! parsebin ! $dec ! queue ! m.ref_sink \
      filesrc location=$c/dist.mp4 ! parsebin ! $dec ! queue ! m.dist_sink \
      gpumetrics name=m backend=$backend $mon stats-file=$out/$name.jsonl ! fakesink >/dev/null 2>&1 || fail=1
  done
  if cmp -s $out/mon-nvdec.jsonl $out/mon-cpu.jsonl; then
    echo "monitoring: identical stats ($(grep -c '"type":"frame"' $out/mon-nvdec.jsonl) pairs, \
$(grep -c '"type":"window"' $out/mon-nvdec.jsonl) windows); summary: $(tail -1 $out/mon-nvdec.jsonl | cut -c1-160)"
    grep -o '"alerts":\[[^]]*\]' $out/mon-nvdec.jsonl | tail -1
  else
    echo "monitoring: stats DIFFER"; diff <(head -3 $out/mon-nvdec.jsonl) <(head -3 $out/mon-cpu.jsonl); fail=1
  fi
  bench || return 0
  step "throughput: 1080p H.264, 4 x 300 frames per input, PSNR, pairing=sequence (wall time)"
  local f
  for f in ref dist; do
    gst-launch-1.0 -q filesrc location=$c/$f.mp4 ! qtdemux ! h264parse ! \
      video/x-h264,stream-format=byte-stream ! filesink location=/tmp/$f.h264
    cat /tmp/$f.h264 /tmp/$f.h264 /tmp/$f.h264 /tmp/$f.h264 >/tmp/${f}4.h264
  done
  timed() {
    local label=$1 backend=$2 dec=$3 i t0 ms
    for i in 1 2 3; do
      t0=$(date +%s%N)
      if [ "$backend" = none ]; then
        gst-launch-1.0 -q filesrc location=/tmp/ref4.h264 ! h264parse ! $dec ! fakesink \
          filesrc location=/tmp/dist4.h264 ! h264parse ! $dec ! fakesink || fail=1
      else
        gst-launch-1.0 -q filesrc location=/tmp/ref4.h264 ! h264parse ! $dec ! queue ! m.ref_sink \
          filesrc location=/tmp/dist4.h264 ! h264parse ! $dec ! queue ! m.dist_sink \
          gpumetrics name=m backend=$backend pairing=sequence stats-file=/tmp/bench.jsonl ! fakesink || fail=1
      fi
      ms=$((($(date +%s%N) - t0) / 1000000))
      echo "  $label, run $i: $ms ms = $((1200 * 1000 / ms)) pairs/s"
    done
  }
  timed "NVDEC -> gpumetrics cuda (zero-copy)" cuda nvh264dec
  timed "NVDEC -> cudadownload -> gpumetrics cuda" cuda "nvh264dec ! cudadownload ! video/x-raw"
  timed "openh264dec -> gpumetrics cuda" cuda openh264dec
  timed "openh264dec -> gpumetrics cpu" cpu openh264dec
  timed "NVDEC -> fakesink (decode only)" none nvh264dec
  timed "openh264dec -> fakesink (decode only)" none openh264dec
}

step_colour() {
  local c=$d/data/colour kind
  need $d/gst/env.sh $d/plugin/libgstgpumetrics.so || return 0
  have $c/sdr-q12.h265 $c/pq-cpu.jsonl || return 0
  # NVDEC Main10 (P010 in CUDA memory) into backend=cuda against avdec_h265 + backend=cpu.
  for kind in sdr pq; do
    step "NVDEC HEVC Main10 $kind: nvh265dec (CUDA memory) + backend=cuda vs avdec_h265 + backend=cpu"
    GST_DEBUG=gpumetrics:4 gst-launch-1.0 -v \
      filesrc location=$c/$kind-q12.h265 ! h265parse ! nvh265dec ! queue ! m.ref_sink \
      filesrc location=$c/$kind-q34.h265 ! h265parse ! nvh265dec ! queue ! m.dist_sink \
      gpumetrics name=m backend=cuda metrics=psnr+ssimulacra2 pairing=sequence \
      stats-file=$out/$kind-cuda.jsonl ! fakesink 2>&1 |
      grep -E "nvh265dec0.GstPad:src: caps|using backend|frames read|ERROR" | sed -e 's/.*:<m> /  /' | cut -c1-260
    python3 - "$out/$kind-cuda.jsonl" "$c/$kind-cpu.jsonl" <<'PY' || fail=1
import json, sys
def load(p):
    return [json.loads(l) for l in open(p) if '"frame"' in l and '"type":"frame"' in l]
gpu, cpu = load(sys.argv[1]), load(sys.argv[2])
assert len(gpu) == len(cpu) == 60, (len(gpu), len(cpu))
def num(v):
    return float("inf") if v == "inf" else float(v)
ds = max(abs(num(g["ssimulacra2"]) - num(c["ssimulacra2"])) for g, c in zip(gpu, cpu))
dp = max(abs(num(g["psnr-avg"]) - num(c["psnr-avg"])) for g, c in zip(gpu, cpu))
mean = sum(num(g["ssimulacra2"]) for g in gpu) / len(gpu)
print(f"  {len(gpu)} pairs: ssimulacra2 mean {mean:.4f}, max |gpu - cpu| ssimulacra2 {ds:.2e}, psnr-avg {dp:.2e}")
sys.exit(0 if ds <= 0.01 and dp == 0 else 1)
PY
  done
}

step_cli() {
  local c=$d/data/cli
  need $d/gst/env.sh $B/gpumetrics || return 0
  have $c/ref.mp4 $c/dist.mp4 || return 0
  step "gpumetrics command: two 1080p H.264 files, all metrics"
  /usr/bin/time -f "wall %e s" $B/gpumetrics $c/ref.mp4 $c/dist.mp4 --metrics all -v \
    -o $out/cli.jsonl --format jsonl 2>&1 | tail -40 || fail=1
  step "gpumetrics command: PSNR only (decode-bound), and --fail-below"
  /usr/bin/time -f "wall %e s" $B/gpumetrics $c/ref.mp4 $c/dist.mp4 --fail-below psnr-avg=60 2>&1 | tail -20
  echo "exit status (expected 3): ${PIPESTATUS[0]}"
  step "gpumetrics command: one reference against two distorted files (one tee, NVDEC), against single runs"
  /usr/bin/time -f "wall %e s" $B/gpumetrics $c/ref.mp4 $c/dist.mp4 $c/ref.mp4 --metrics psnr,ssim,vmaf \
    -v --format json -o $out/several.json 2>&1 | tail -30 || fail=1
  $B/gpumetrics $c/ref.mp4 $c/dist.mp4 --metrics psnr,ssim,vmaf -q --format json -o $out/single.json || fail=1
  python3 - "$out/several.json" "$out/single.json" "$c/dist.mp4" <<'PY' || fail=1
import json, sys
several, single = (json.load(open(p)) for p in sys.argv[1:3])
mine = [f for f in several["frames"] if f.get("distorted") == sys.argv[3]]
theirs = single["frames"]
assert len(mine) == len(theirs) > 0, (len(mine), len(theirs))
# CUDA SSIM adds its block sums with atomics: its last bit may differ between runs.
worst, bad = 0.0, 0
for a, b in zip(mine, theirs):
    a = {k: v for k, v in a.items() if k != "distorted"}
    if a.keys() != b.keys():
        bad += 1
        continue
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, float) and isinstance(y, float):
            worst = max(worst, abs(x - y) / max(abs(y), 1e-300))
        elif x != y:
            bad += 1
print(f"several vs single: {len(mine)} frames of {sys.argv[3]}, {bad} values differ, "
      f"largest relative difference {worst:.1e}")
sys.exit(1 if bad or worst > 1e-12 else 0)
PY
}

# libvmaf v3.1.0 (CUDA build, asm on) built and timed there next to gpumetrics' figures.
# data/lv, laid out by hand: src/ (libvmaf's libvmaf/ and model/ folders of v3.1.0), bin/
# (nasm and xxd from this machine: apt-get install nasm xxd), tool/ (a copy of
# ../shared/tools/vmaf-cuda). The frames are made there without FFmpeg: windows of one random
# buffer (motion), the distorted copy quantised to multiples of 8.
step_libvmaf32() {
  local V=$PWD/$d/data/lv32/vmaf
  have $V || return 0
  run $V --version
  nproc
  # 120 frames of 1080p 10-bit 4:2:0: a random picture moving one pixel a frame, and the
  # same one frame ahead as the distorted input.
  python3 - <<'PY'
import random, struct
w, h, n = 1920, 1080, 120
random.seed(7)
cw, ch = w // 2, h // 2
pad = 64
big = [random.randrange(64, 940) for _ in range((w + pad * 2) * 8)]
def plane(i, pw, ph):
    rows = []
    for y in range(ph):
        o = ((y * 7) % 8) * (w + pad * 2) + i % pad
        rows.append(struct.pack('<%dH' % pw, *big[o:o + pw]))
    return b''.join(rows)
with open('/tmp/r10.yuv', 'wb') as r, open('/tmp/d10.yuv', 'wb') as d:
    for i in range(n):
        f = plane(i, w, h) + plane(i, cw, ch) + plane(i + 3, cw, ch)
        r.write(f)
        d.write(plane(i + 1, w, h) + plane(i + 1, cw, ch) + plane(i + 4, cw, ch))
PY
  local m
  for m in vmaf_v1.0.16_3d0h vmaf_v0.6.1; do
    step "libvmaf 3.2.0 CPU ($m), 16 threads, 120 frames 1080p 10-bit"
    /usr/bin/time -f "wall %e s" $V -r /tmp/r10.yuv -d /tmp/d10.yuv -w 1920 -h 1080 -p 420 -b 10 \
      --threads 16 -m version=$m -o /tmp/lv32.json --json -q 2>&1 | grep -v WARNING | tail -2
    python3 -c "import json; d=json.load(open('/tmp/lv32.json')); print('fps', d.get('fps'), 'pooled vmaf', d['pooled_metrics']['vmaf']['mean'], 'frames', len(d['frames']))"
  done
  step "libvmaf 3.2.0 CPU, --aom_ctc v7.0, 16 threads, 120 frames 1080p 10-bit"
  /usr/bin/time -f "wall %e s" $V -r /tmp/r10.yuv -d /tmp/d10.yuv -w 1920 -h 1080 -p 420 -b 10 \
    --threads 16 --aom_ctc v7.0 -o /tmp/lv32a.json --json -q 2>&1 | grep -v WARNING | tail -2
  python3 -c "import json; d=json.load(open('/tmp/lv32a.json')); print('fps', d.get('fps'), 'frames', len(d['frames']), d.get('aggregate_metrics'))"
  step "libvmaf 3.2.0 CPU, --feature cambi alone, 16 threads, 120 frames 1080p 10-bit"
  /usr/bin/time -f "wall %e s" $V -r /tmp/r10.yuv -d /tmp/d10.yuv -w 1920 -h 1080 -p 420 -b 10 \
    --threads 16 --no_prediction --feature cambi -o /tmp/lv32c.json --json -q 2>&1 | grep -v WARNING | tail -2
  python3 -c "import json; d=json.load(open('/tmp/lv32c.json')); print('fps', d.get('fps'), 'frames', len(d['frames']))"
}

step_libvmaf() {
  local lv=$PWD/$d/data/lv mode extra
  have $lv/src $lv/bin $lv/tool/build-on-gpu.sh || return 0
  step "libvmaf 3.1.0 built with CUDA on this machine"
  PATH=$lv/bin:$PATH bash $lv/tool/build-on-gpu.sh $lv/src /tmp/lvb 2>&1 | tail -3
  local V=/tmp/lvb/libvmaf/build/tools/vmaf
  run $V --version
  nproc
  python3 - <<'PY'
import os
w, h, n = 1920, 1080, 300
size = w * h * 3 // 2
base = os.urandom(size + 64 * n)
table = bytes((v // 8) * 8 for v in range(256))
with open('/tmp/r.yuv', 'wb') as r, open('/tmp/d.yuv', 'wb') as d:
    for i in range(n):
        f = base[64 * i : 64 * i + size]
        r.write(f)
        d.write(f.translate(table))
PY
  for mode in cuda cpu; do
    extra=""; [ $mode = cpu ] && extra="--gpumask 1"
    step "libvmaf $mode, 16 threads, 300 frames 1080p"
    /usr/bin/time -f "wall %e s" $V -r /tmp/r.yuv -d /tmp/d.yuv -w 1920 -h 1080 -p 420 -b 8 \
      --threads 16 -m version=vmaf_v0.6.1 $extra -o /tmp/$mode.json --json -q 2>&1 | tail -3
    python3 -c "import json; d=json.load(open('/tmp/$mode.json')); print('pooled vmaf', d['pooled_metrics']['vmaf']['mean'], 'frames', len(d['frames']))"
  done
  step "the same, 30 frames (start-up share)"
  head -c $((1920 * 1080 * 3 / 2 * 30)) /tmp/r.yuv >/tmp/r30.yuv
  head -c $((1920 * 1080 * 3 / 2 * 30)) /tmp/d.yuv >/tmp/d30.yuv
  for mode in cuda cpu; do
    extra=""; [ $mode = cpu ] && extra="--gpumask 1"
    /usr/bin/time -f "$mode 30 frames: wall %e s" $V -r /tmp/r30.yuv -d /tmp/d30.yuv -w 1920 -h 1080 \
      -p 420 -b 8 --threads 16 -m version=vmaf_v0.6.1 $extra -o /dev/null -q 2>&1 | tail -1
  done
}

# Vship (github.com/Line-fr/Vship, 4.0.2) next to the engine in one call (issue 25). Its C
# API (src/VshipAPI.h) is one shared library, src/VshipLib.cpp built by nvcc for sm_90 (a
# few minutes). A build is reused when its stamp (Vship's commit, nvcc's version, the flags)
# matches: data/vship-lib (packed from .gpu/inputs/vship-lib), else .gpu/vship-build (left
# by an earlier call on a machine still warm). A fresh build is copied to $OUT/vship-lib/:
# put it in .gpu/inputs/vship-lib here to spare the next call the build.
# scripts/vship/vship_bench.c (built with gcc against libvship.so and libcudart) then times
# Butteraugli and SSIMULACRA2 at 1080p I420 on device, pinned and pageable frames and with 8
# handlers on 8 threads; then the engine's throughput bench (one engine, 2 pairs in flight:
# its `device` rows against Vship's device rows, its `host` rows, pageable frames staged by
# the engine, against Vship's pageable and pinned rows) and streams bench (8 engines, one
# thread each, against Vship's 8 handlers) for the same metrics.
step_vship() {
  local src=$PWD/$d/data/vship-src build=$PWD/.gpu/vship-build packed=$PWD/$d/data/vship-lib
  bench || return 0
  have $src/src/VshipLib.cpp $src/COMMIT || return 0
  command -v nvcc >/dev/null || { echo "FAILED: no nvcc on PATH ($PATH)"; fail=1; return 0; }
  local cuda cudalib lib flags stamp t0
  cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  cudalib=$cuda/lib64
  [ -e $cudalib/libcudart.so ] || cudalib=$(dirname "$(ls $cuda/targets/*/lib/libcudart.so | head -1)")
  flags="-x cu -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 --cudart shared -Xcompiler -fPIC -shared"
  stamp="vship $(cat $src/COMMIT); $(nvcc --version | tail -1); $flags"
  step "Vship $(cat $src/COMMIT): libvship.so for sm_90"
  if [ -f $packed/libvship.so ] && [ "$(cat $packed/stamp 2>/dev/null)" = "$stamp" ]; then
    lib=$packed
    echo "using the packed build (data/vship-lib)"
  elif [ -f $build/libvship.so ] && [ "$(cat $build/stamp 2>/dev/null)" = "$stamp" ]; then
    lib=$build
    echo "using the build left by an earlier call (.gpu/vship-build)"
  else
    lib=$build
    rm -rf $build && mkdir -p $build
    echo "nvcc $flags -I include src/VshipLib.cpp -o libvship.so (in $src)"
    t0=$(date +%s)
    # shellcheck disable=SC2086 # $flags is a list of arguments
    if ! (cd $src && nvcc $flags -I include -Xlinker -rpath,$cudalib src/VshipLib.cpp \
      -o $build/libvship.so) >$out/vship-build.log 2>&1; then
      tail -30 $out/vship-build.log
      echo "FAILED: the nvcc build of libvship.so (log: \$OUT/vship-build.log)"
      fail=1; return 0
    fi
    echo "$stamp" >$build/stamp
    echo "built in $(($(date +%s) - t0)) s; $(grep -c -i warning $out/vship-build.log) warning lines (\$OUT/vship-build.log)"
    mkdir -p $out/vship-lib && cp $build/libvship.so $build/stamp $out/vship-lib/
  fi
  echo "$lib/libvship.so: $(du -h $lib/libvship.so | cut -f1)"
  mkdir -p $build
  gcc -O2 -std=c11 -Wall -I$cuda/include -I$src/src scripts/vship/vship_bench.c -o $build/vship_bench \
    -L$lib -lvship -L$cudalib -lcudart -lpthread -lm -Wl,-rpath,$lib:$cudalib ||
    { echo "FAILED: gcc scripts/vship/vship_bench.c"; fail=1; return 0; }
  step "Vship: Butteraugli, SSIMULACRA2 and CVVDP, 1080p I420 (scripts/vship/vship_bench.c)"
  t0=$(date +%s)
  run $build/vship_bench --seconds 2 --handlers 8
  echo "($(($(date +%s) - t0)) s)"
  need $B/throughput $B/streams || return 0
  step "the engine: throughput of butteraugli, ssimulacra2 and cvvdp, 1080p, 2 pairs in flight (device frames; host: pageable, staged by the engine)"
  run $B/throughput --seconds 2 --no-cpu --sizes 1080p --metrics butteraugli,ssimulacra2,cvvdp --in-flight 2
  step "the engine: 8 engines on 8 threads in one process (streams), 1080p, 2 pairs in flight each"
  run $B/streams --seconds 2 --engines 8 --frames device,host --in-flight 2 --sets butteraugli,ssimulacra2
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || read -ra steps <<<"$(cat $d/steps 2>/dev/null || echo "$ALL_STEPS")"
for current in "${steps[@]}"; do
  bins "$current" >/dev/null || exit 2
done
step "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
date -u
echo "steps: ${steps[*]}; built in $BUILD_ROOT"
for current in "${steps[@]}"; do
  echo; echo "######## $current"
  "step_$current"
done
echo
[ $fail = 0 ] && echo "gpu-all: every step passed" || echo "gpu-all: FAILURES (search the log for FAILED)"
exit $fail
