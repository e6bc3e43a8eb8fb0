//! `--paths FILE`: every request asks for a path drawn at random from a list, as wrk does
//! with a script that returns a random request each time (`bench/lua/paths.lua`). This is
//! how a whole site is loaded: many files, in no order a cache could predict.
//!
//! Each path's request is rendered once before the run. A connection draws with its own
//! generator, seeded from `--seed` and the connection's number, so a run repeats and no two
//! connections walk the list in step.

use std::path::Path;

/// The paths of a list file: one URL path a line, blank lines skipped.
///
/// A path must start with `/` and hold no whitespace or control character; the error names
/// the file and the line.
pub fn read_list(file: &Path) -> Result<Vec<String>, String> {
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("--paths {}: {e}", file.display()))?;
    parse_list(&text).map_err(|e| format!("--paths {}: {e}", file.display()))
}

/// [`read_list`] on the file's contents.
pub fn parse_list(text: &str) -> Result<Vec<String>, String> {
    let mut paths = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let valid =
            line.starts_with('/') && line.bytes().all(|b| b.is_ascii_graphic() || b >= 0x80);
        if !valid {
            return Err(format!(
                "line {}: {line:?} is not a URL path (it must start with / and hold no spaces)",
                number + 1
            ));
        }
        paths.push(line.to_string());
    }
    if paths.is_empty() {
        return Err("no paths in the list".to_string());
    }
    Ok(paths)
}

/// A connection's draw over the rendered requests: xorshift64*, small and fast; statistical
/// quality beyond "uniform enough and not in step" does not matter here.
#[derive(Debug, Clone)]
pub struct Draw {
    state: u64,
}

impl Draw {
    /// The generator of connection `index` in a run seeded with `seed`.
    pub fn new(seed: u64, index: u64) -> Draw {
        // splitmix64 of (seed, index): distinct, never-zero starting states.
        let mut z = seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(index.wrapping_add(1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Draw { state: z | 1 }
    }

    /// The next index below `len` (`len` > 0).
    pub fn below(&mut self, len: usize) -> usize {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // The high bits, scaled: no modulo bias worth speaking of for lists this size.
        ((u128::from(r) * len as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_skips_blank_lines_and_rejects_non_paths() {
        assert_eq!(
            parse_list("/a.css\n\n/b/c.js\r\n").unwrap(),
            vec!["/a.css".to_string(), "/b/c.js".to_string()]
        );
        let e = parse_list("/ok\nnot-a-path\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        let e = parse_list("/has space\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        assert_eq!(parse_list("\n\n").unwrap_err(), "no paths in the list");
    }

    #[test]
    fn missing_file_is_named() {
        let e = read_list(Path::new("/nonexistent/fibra-paths.txt")).unwrap_err();
        assert!(e.contains("/nonexistent/fibra-paths.txt"), "{e}");
    }

    #[test]
    fn draws_cover_the_list_evenly_and_differ_per_connection() {
        let mut counts = [0u32; 10];
        let mut draw = Draw::new(1, 0);
        for _ in 0..100_000 {
            counts[draw.below(10)] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
        let first: Vec<usize> = {
            let mut d = Draw::new(1, 0);
            (0..16).map(|_| d.below(1000)).collect()
        };
        let again: Vec<usize> = {
            let mut d = Draw::new(1, 0);
            (0..16).map(|_| d.below(1000)).collect()
        };
        let other: Vec<usize> = {
            let mut d = Draw::new(1, 1);
            (0..16).map(|_| d.below(1000)).collect()
        };
        assert_eq!(first, again, "same seed and connection, same walk");
        assert_ne!(first, other, "another connection walks elsewhere");
    }
}
