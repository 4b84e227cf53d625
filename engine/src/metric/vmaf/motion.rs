//! Motion's options and its temporal steps (libvmaf 3.2.0 `integer_motion.c`): a pair's
//! motion score is the SAD of the blurred difference to an earlier reference frame
//! (kernel side: `gpumetrics_kernels::vmaf::motion`); motion2 and motion3 come from the
//! scores of the neighbouring pairs, so they are known one pair later (two with the
//! five-frame window, whose first pairs take the third pair's score).

/// libvmaf's motion options, as a model's `feature_opts_dicts` set them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MotionOptions {
    /// `motion_force_zero`: every score is 0.
    pub force_zero: bool,
    /// `motion_blend_factor` and `motion_blend_offset`: motion3 is
    /// `m·factor + (1 − factor)·min(offset, m)` of motion2.
    pub blend_factor: f64,
    pub blend_offset: f64,
    /// `motion_fps_weight`: a factor on every score.
    pub fps_weight: f64,
    /// `motion_max_val`: scores (and motion3) are clipped to it.
    pub max_val: f64,
    /// `motion_five_frame_window`: measure against the frame two back (i−2, i, i+2).
    pub five_frame_window: bool,
    /// `motion_moving_average`: motion3 is the mean of this and the previous pair's.
    pub moving_average: bool,
}

impl Default for MotionOptions {
    /// libvmaf's defaults (the v0 models change none of them).
    fn default() -> Self {
        MotionOptions {
            force_zero: false,
            blend_factor: 1.0,
            blend_offset: 40.0,
            fps_weight: 1.0,
            max_val: 10000.0,
            five_frame_window: false,
            moving_average: false,
        }
    }
}

impl MotionOptions {
    /// Sets one option from a model's feature options (libvmaf's names and aliases, and its
    /// ranges); `Ok(false)` when `key` is not a motion option.
    pub fn set(&mut self, key: &str, value: &serde_json::Value) -> Result<bool, String> {
        let number = |lo: f64, hi: f64| -> Result<f64, String> {
            let v = value
                .as_f64()
                .ok_or_else(|| format!("{key} is not a number"))?;
            if (lo..=hi).contains(&v) {
                Ok(v)
            } else {
                Err(format!("{key} = {v} is outside {lo}..={hi}"))
            }
        };
        let flag = || -> Result<bool, String> {
            value
                .as_bool()
                .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
                .ok_or_else(|| format!("{key} is not true or false"))
        };
        match key {
            "motion_force_zero" | "force_0" => self.force_zero = flag()?,
            "motion_blend_factor" | "mbf" => self.blend_factor = number(0.0, 1.0)?,
            "motion_blend_offset" | "mbo" => self.blend_offset = number(0.0, 1000.0)?,
            "motion_fps_weight" | "mfw" => self.fps_weight = number(0.0, 5.0)?,
            "motion_max_val" | "mmxv" => self.max_val = number(0.0, 10000.0)?,
            "motion_five_frame_window" | "mffw" => self.five_frame_window = flag()?,
            "motion_moving_average" | "mma" => self.moving_average = flag()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// How many reference frames back a pair's score is measured (1, or 2 with the
    /// five-frame window); also the first pair index with a score, and motion2's stride.
    pub fn distance(&self) -> usize {
        if self.five_frame_window { 2 } else { 1 }
    }

    /// Pairs a pair's motion2 and motion3 wait for.
    pub fn lag(&self) -> usize {
        self.distance()
    }

    /// The score of the pair at `index` of its sequence from the SAD its kernels summed
    /// over a w×h frame (`None`: no earlier frame, score 0).
    pub fn score(&self, sad: Option<u64>, w: u32, h: u32) -> f64 {
        match sad {
            Some(sad) if !self.force_zero => {
                let m = sad as f64 / 256.0 / (w * h) as f64 * self.fps_weight;
                if m < self.max_val { m } else { self.max_val }
            }
            _ => 0.0,
        }
    }

    fn blend(&self, m: f64) -> f64 {
        let low = if self.blend_offset < m {
            self.blend_offset
        } else {
            m
        };
        let b = m * self.blend_factor + (1.0 - self.blend_factor) * low;
        if b < self.max_val { b } else { self.max_val }
    }
}

/// motion2 and motion3 of one sequence, one pair at a time, from the pairs' scores.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Motion {
    /// Index of the next pair in its sequence.
    index: usize,
    /// The previous pair's score.
    previous: f64,
    /// The previous pair's motion3 before averaging.
    processed: f64,
}

impl Motion {
    /// (motion2, motion3) of the pair whose score is `score`, given the scores of the pairs
    /// after it (at least [`MotionOptions::lag`] of them unless the sequence ends sooner).
    pub fn next(&mut self, o: &MotionOptions, score: f64, following: &[f64]) -> (f64, f64) {
        let (i, first) = (self.index, o.distance());
        let motion2 = if i < first {
            0.0
        } else {
            match following.first() {
                None => score,
                Some(&hi) => {
                    // The lower neighbour: this pair (stride 1) or the previous one (stride
                    // 2), once it has a score of its own.
                    let lo_index = i + 1 - first;
                    if lo_index >= first {
                        let lo = if first == 1 { score } else { self.previous };
                        if lo < hi { lo } else { hi }
                    } else {
                        hi
                    }
                }
            }
        };
        let motion3 = if i < first {
            // Until the first scored pair's own, motion3 is the first scored pair's score.
            let stamp = following.get(first - i - 1).map_or(0.0, |&m| o.blend(m));
            self.processed = stamp;
            stamp
        } else {
            let processed = o.blend(motion2);
            let m3 = if o.moving_average {
                (processed + self.processed) / 2.0
            } else {
                processed
            };
            self.processed = processed;
            m3
        };
        self.previous = score;
        self.index += 1;
        (motion2, motion3)
    }

    /// The next pair starts a sequence.
    pub fn restart(&mut self) {
        *self = Motion::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// motion2 and motion3 of a whole sequence of scores, fed with `lag` pairs ahead.
    fn run(o: &MotionOptions, scores: &[f64]) -> Vec<(f64, f64)> {
        let mut m = Motion::default();
        (0..scores.len())
            .map(|i| {
                let end = (i + 1 + o.lag()).min(scores.len());
                m.next(o, scores[i], &scores[i + 1..end])
            })
            .collect()
    }

    #[test]
    fn motion2_is_the_smaller_neighbour_and_motion3_stamps_the_first_score() {
        let o = MotionOptions::default();
        let out = run(&o, &[0.0, 5.0, 3.0, 4.0]);
        assert_eq!(
            out.iter().map(|p| p.0).collect::<Vec<_>>(),
            [0.0, 3.0, 3.0, 4.0]
        );
        // motion3 = motion2 clipped, and the first pair takes pair 1's score.
        assert_eq!(
            out.iter().map(|p| p.1).collect::<Vec<_>>(),
            [5.0, 3.0, 3.0, 4.0]
        );
        // One pair alone has neither.
        assert_eq!(run(&o, &[0.0]), [(0.0, 0.0)]);
    }

    #[test]
    fn the_five_frame_window_skips_a_pair_and_averages() {
        let o = MotionOptions {
            five_frame_window: true,
            moving_average: true,
            max_val: 18.0,
            ..Default::default()
        };
        assert_eq!(o.lag(), 2);
        let s = [0.0, 0.0, 6.0, 8.0, 20.0, 2.0, 5.0];
        let out = run(&o, &s);
        // motion2: pair 2 takes pair 3's score, later pairs the smaller of i−1 and i+1, the
        // last its own.
        let m2: Vec<f64> = out.iter().map(|p| p.0).collect();
        assert_eq!(m2, [0.0, 0.0, 8.0, 6.0, 2.0, 5.0, 5.0]);
        // motion3: pairs 0 and 1 stamp pair 2's score; then the mean of this and the last
        // clipped motion2 (pair 2 averages with the stamp).
        let m3: Vec<f64> = out.iter().map(|p| p.1).collect();
        assert_eq!(m3, [6.0, 6.0, 7.0, 7.0, 4.0, 3.5, 5.0]);
    }

    #[test]
    fn scores_are_clipped_and_blended_as_libvmaf() {
        let o = MotionOptions {
            max_val: 18.0,
            blend_factor: 0.5,
            blend_offset: 10.0,
            ..Default::default()
        };
        // 256·w·h·30 → 30, clipped to 18.
        assert_eq!(o.score(Some(256 * 4 * 30), 2, 2), 18.0);
        assert_eq!(o.score(None, 2, 2), 0.0);
        // 16·0.5 + 0.5·min(10, 16) = 13.
        assert_eq!(o.blend(16.0), 13.0);
        let zero = MotionOptions {
            force_zero: true,
            ..Default::default()
        };
        assert_eq!(zero.score(Some(1 << 20), 2, 2), 0.0);
        let mut p = MotionOptions::default();
        assert_eq!(p.set("motion_max_val", &18.0.into()), Ok(true));
        assert_eq!(p.max_val, 18.0);
        assert!(p.set("motion_max_val", &(-1.0).into()).is_err());
        assert_eq!(p.set("mffw", &true.into()), Ok(true));
        assert!(p.five_frame_window);
        assert_eq!(p.set("adm_csf_mode", &2.into()), Ok(false));
    }
}
