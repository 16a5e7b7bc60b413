//! Python's `random.Random`, exactly as far as upstream's macro randomisation needs it.
//!
//! Upstream expands `@daily` and friends by seeding Python's generator with the string `"<tool> <job>"` and drawing
//! with `randint`, so producing the same schedules means reproducing Python bit for bit: the MT19937 core
//! (`init_genrand`, `init_by_array`, `genrand_uint32`), seeding version 2 for strings, `getrandbits` and `randint`'s
//! rejection sampling. This is not a general-purpose generator and nothing here is fit for security.

use sha2::{Digest, Sha512};

/// Size of the MT19937 state in 32-bit words.
const N: usize = 624;
/// The twist's middle offset.
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// A Mersenne Twister that draws the same numbers as Python's `random.Random` seeded with the same string.
#[derive(Clone)]
pub(crate) struct PythonRandom {
    state: [u32; N],
    /// The next word of `state` to twist and hand out (`N` wraps round to 0).
    index: usize,
}

/// `init_genrand(19650218)`, where every `init_by_array` starts.
const INIT_BY_ARRAY_START: [u32; N] = init_genrand(19_650_218);

impl PythonRandom {
    /// Seeds like `random.Random(seed)` for a `str` seed (seed version 2, Python's default since 3.2): the UTF-8
    /// bytes followed by their SHA-512 digest, read as one big-endian integer.
    pub(crate) fn from_str_seed(seed: &str) -> Self {
        let mut bytes = seed.as_bytes().to_vec();
        bytes.extend_from_slice(&Sha512::digest(seed.as_bytes()));
        Self::from_key(&integer_to_key(&bytes))
    }

    /// Python's `init_by_array`.
    fn from_key(key: &[u32]) -> Self {
        // Python never passes an empty key (zero becomes one zero word); mapping it the same way keeps this total.
        let key = if key.is_empty() { &[0][..] } else { key };
        let mut state = INIT_BY_ARRAY_START;
        let mut i = 1;
        let mut j = 0;
        // Always `state[i - 1]`, kept in a register: reading it back from the array it was just stored to makes
        // every step wait for the store.
        let mut previous = state[0];
        for _ in 0..N.max(key.len()) {
            // CPython adds the key index as a `uint32_t`; truncating it the same way keeps huge seeds identical.
            #[expect(
                clippy::cast_possible_truncation,
                reason = "CPython truncates the index to uint32_t too"
            )]
            let j_word = j as u32;
            previous = (state[i] ^ (previous ^ (previous >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j_word);
            state[i] = previous;
            i += 1;
            j += 1;
            if i >= N {
                state[0] = state[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            #[expect(clippy::cast_possible_truncation, reason = "`i` is below N = 624")]
            let i_word = i as u32;
            previous = (state[i] ^ (previous ^ (previous >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i_word);
            state[i] = previous;
            i += 1;
            if i >= N {
                state[0] = state[N - 1];
                i = 1;
            }
        }
        // Guarantees a non-zero initial state whatever the key.
        state[0] = 0x8000_0000;
        Self { state, index: 0 }
    }

    /// Python's `genrand_uint32`: the next 32 random bits.
    ///
    /// Python twists all `N` words when it runs out; twisting one word at a time, in the same order, gives the
    /// same words (word `k` reads words `k + 1` and `k + M` exactly as the whole pass does when it reaches `k`)
    /// and spares a seeded generator that draws a few words the other 600.
    fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.index = 0;
        }
        let k = self.index;
        let y = (self.state[k] & UPPER_MASK) | (self.state[(k + 1) % N] & LOWER_MASK);
        let magic = if y & 1 == 0 { 0 } else { MATRIX_A };
        self.state[k] = self.state[(k + M) % N] ^ (y >> 1) ^ magic;
        self.index += 1;
        let mut y = self.state[k];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)` for `k <= 64`; larger requests are capped at 64 bits.
    ///
    /// Python fills the result 32 bits at a time, least significant word first, and takes the top bits of the
    /// last word when `k` is not a multiple of 32.
    pub(crate) fn getrandbits(&mut self, k: u32) -> u64 {
        let mut remaining = k.min(64);
        let mut result = 0;
        let mut shift = 0;
        while remaining > 0 {
            let mut word = self.next_u32();
            if remaining < 32 {
                word >>= 32 - remaining;
            }
            result |= u64::from(word) << shift;
            shift += 32;
            remaining = remaining.saturating_sub(32);
        }
        result
    }

    /// `randint(low, high)`: a number in `low..=high`, drawn by rejection sampling on `getrandbits` the way
    /// Python's `_randbelow_with_getrandbits` does.
    ///
    /// Callers pass `low <= high`. Python raises `ValueError` for an inverted range; here it returns `low` without
    /// drawing, so that no input can make this panic.
    pub(crate) fn randint(&mut self, low: u32, high: u32) -> u32 {
        let Some(span) = high.checked_sub(low) else {
            return low;
        };
        let n = u64::from(span) + 1;
        let bits = u64::BITS - n.leading_zeros();
        loop {
            let candidate = self.getrandbits(bits);
            if candidate < n {
                // `candidate < n <= high - low + 1`, so the sum is at most `high`.
                return low + u32::try_from(candidate).unwrap_or(span);
            }
        }
    }
}

/// Python's `init_genrand`.
const fn init_genrand(seed: u32) -> [u32; N] {
    let mut state = [0; N];
    state[0] = seed;
    let mut i = 1;
    while i < N {
        let previous = state[i - 1];
        #[expect(clippy::cast_possible_truncation, reason = "`i` is below N = 624")]
        let i_word = i as u32;
        state[i] = 1_812_433_253_u32
            .wrapping_mul(previous ^ (previous >> 30))
            .wrapping_add(i_word);
        i += 1;
    }
    state
}

/// Splits a non-negative integer, given as big-endian bytes, into the key `init_by_array` receives from
/// `random.seed`: 32-bit words, least significant first, as many as the integer's bit length needs (so leading zero
/// bytes do not count), and a single zero word for zero.
fn integer_to_key(big_endian: &[u8]) -> Vec<u32> {
    let first_significant = big_endian
        .iter()
        .position(|&byte| byte != 0)
        .unwrap_or(big_endian.len());
    let significant = &big_endian[first_significant..];
    if significant.is_empty() {
        return vec![0];
    }
    significant
        .rchunks(4)
        .map(|chunk| {
            chunk
                .iter()
                .fold(0, |word, &byte| (word << 8) | u32::from(byte))
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod oracle {
    //! Runs Python, the reference these modules are tested against.

    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Runs `python3 -c script` with `input` on stdin and returns its stdout.
    ///
    /// Panics (failing the test) when `python3` is missing: the differential tests must never pass by skipping.
    pub(crate) fn python(script: &str, input: &str) -> String {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(script)
            .env("PYTHONIOENCODING", "utf-8")
            .env("PYTHONHASHSEED", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 must be installed: it is the oracle for the differential tests");
        child
            .stdin
            .take()
            .expect("stdin was piped")
            .write_all(input.as_bytes())
            .expect("python3 reads its input");
        let output = child.wait_with_output().expect("python3 runs to the end");
        assert!(
            output.status.success(),
            "python3 failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("python3 prints UTF-8")
    }

    /// Deterministic, varied test strings: ASCII names, spaces, accents, Cyrillic, CJK, emoji, empty strings.
    pub(crate) fn sample_names(count: usize) -> Vec<(String, String)> {
        const PIECES: [&str; 16] = [
            "tool", "job", "-", ".", "x", "42", "é", "ß", "Ж", "中", "🦀", " ", "tf-test", "bot",
            "\u{301}", "z",
        ];
        let mut seed: u64 = 0x5eed_cafe;
        let mut next = move || {
            // A 64-bit LCG (Knuth's MMIX constants): only variety matters here, not quality.
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(seed >> 33).expect("31 bits fit in usize")
        };
        let name = |next: &mut dyn FnMut() -> usize| {
            let length = next() % 6;
            (0..length)
                .map(|_| PIECES[next() % PIECES.len()])
                .collect::<String>()
        };
        let mut pairs = vec![
            ("some-tool".to_owned(), "some-job".to_owned()),
            (String::new(), String::new()),
            ("ünïcødé".to_owned(), "ジョブ".to_owned()),
        ];
        while pairs.len() < count {
            let tool = name(&mut next);
            let job = name(&mut next);
            pairs.push((tool, job));
        }
        pairs
    }

    /// Encodes strings as a JSON array, the way the Python side reads them back.
    pub(crate) fn json_lines(rows: &[Vec<String>]) -> String {
        rows.iter()
            .map(|row| serde_json::to_string(row).expect("strings serialise"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::oracle::{json_lines, python, sample_names};
    use super::*;

    #[test]
    fn matches_the_mt19937_reference_output_for_init_by_array() {
        // First outputs of mt19937ar.c's own test, seeded with init_by_array({0x123, 0x234, 0x345, 0x456}).
        let mut random = PythonRandom::from_key(&[0x123, 0x234, 0x345, 0x456]);
        let first: Vec<u32> = (0..5).map(|_| random.next_u32()).collect();
        assert_eq!(
            first,
            [
                1_067_595_299,
                955_945_823,
                477_289_528,
                4_107_218_783,
                4_228_976_476
            ]
        );
    }

    #[test]
    fn splits_the_seed_integer_into_little_end_first_words() {
        assert_eq!(integer_to_key(&[]), [0]);
        assert_eq!(integer_to_key(&[0, 0]), [0]);
        assert_eq!(integer_to_key(&[0, 0, 1]), [1]);
        assert_eq!(
            integer_to_key(&[0x01, 0x02, 0x03, 0x04, 0x05]),
            [0x0203_0405, 0x01]
        );
        assert_eq!(
            integer_to_key(&[0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x11, 0x22]),
            [0xeeff_1122, 0xaabb_ccdd]
        );
    }

    #[test]
    fn an_empty_key_seeds_like_a_zero_word() {
        let mut empty = PythonRandom::from_key(&[]);
        let mut zero = PythonRandom::from_key(&[0]);
        assert_eq!(empty.next_u32(), zero.next_u32());
    }

    #[test]
    fn randint_with_an_inverted_range_returns_low_without_drawing() {
        let mut random = PythonRandom::from_str_seed("x");
        let mut untouched = random.clone();
        assert_eq!(random.randint(5, 3), 5);
        assert_eq!(random.next_u32(), untouched.next_u32());
    }

    #[test]
    fn randint_covers_the_full_u32_range_without_overflow() {
        let mut random = PythonRandom::from_str_seed("x");
        // Exercises the 33-bit draw; any value is in range, the point is that it does not panic.
        let _ = random.randint(0, u32::MAX);
        assert_eq!(random.randint(7, 7), 7);
    }

    /// Compares seeding, `getrandbits` for every width from 1 to 64, `randint` over several ranges and 1 300 more
    /// words (the state twisted twice more) with Python for 50 varied seeds.
    #[test]
    fn draws_the_same_numbers_as_cpython() {
        const SCRIPT: &str = r#"
import json, random, sys
for line in sys.stdin:
    (seed,) = json.loads(line)
    r = random.Random(seed)
    out = [r.getrandbits(k) for k in range(1, 65)]
    out += [r.randint(0, 59) for _ in range(20)]
    out += [r.randint(1, 31), r.randint(0, 6), r.randint(1, 12), r.randint(0, 23)]
    out += [r.randint(0, 2**32 - 1), r.randint(10, 10), r.randint(3, 2**31)]
    out += [r.getrandbits(32) for _ in range(1300)]
    print(" ".join(map(str, out)))
"#;
        let mut seeds: Vec<String> = sample_names(50)
            .into_iter()
            .map(|(tool, job)| format!("{tool} {job}"))
            .collect();
        // Longer than the 624-word state, so `init_by_array` walks the key rather than the state.
        seeds.push("x".repeat(3000));
        seeds.push("é🦀".repeat(700));
        let rows: Vec<Vec<String>> = seeds.iter().map(|seed| vec![seed.clone()]).collect();
        let expected = python(SCRIPT, &json_lines(&rows));
        let expected: Vec<&str> = expected.lines().collect();
        assert_eq!(expected.len(), seeds.len());
        for (seed, expected) in seeds.iter().zip(expected) {
            let mut random = PythonRandom::from_str_seed(seed);
            let mut out: Vec<u64> = (1..=64).map(|k| random.getrandbits(k)).collect();
            out.extend((0..20).map(|_| u64::from(random.randint(0, 59))));
            for (low, high) in [
                (1, 31),
                (0, 6),
                (1, 12),
                (0, 23),
                (0, u32::MAX),
                (10, 10),
                (3, 1 << 31),
            ] {
                out.push(u64::from(random.randint(low, high)));
            }
            // Past two full generations of the 624-word state.
            out.extend((0..1300).map(|_| random.getrandbits(32)));
            let actual = out.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
            assert_eq!(actual, expected, "seed {seed:?}");
        }
    }
}
