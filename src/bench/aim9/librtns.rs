//! AIM9's library-routine tests: `string_rtns`, `mem_rtns_1`, `mem_rtns_2`,
//! `sort_rtns_1`.
//!
//! AIM9's exact string mix is not documented; ours does, for each of 8
//! words, 8 operations: format into a buffer, parse a number, a ctype scan,
//! concatenation, comparison, search, case conversion and copy (64 per call).
//! The memory tests call the C library (malloc/calloc/free, mem*) directly.

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::fmt::Write as _;
use std::hint::black_box;

// ---------------------------------------------------------------- string_rtns

const WORDS: [&str; 8] = ["alpha", "Bravo", "charlie42", "DELTA", "echo-echo", "foxtrot", "Golf9", "hotel"];
/// String operations per call: 8 operations x 8 words.
pub const STRING_OPS: usize = 8 * WORDS.len();

struct Strings {
    fmt: String,
    cat: String,
    up: String,
    copy: String,
    hay: String,
    count: usize,
}

impl Work for Strings {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        let mut acc = 0usize;
        self.cat.clear();
        for (i, w) in black_box(&WORDS).iter().enumerate() {
            // 1 formatting
            self.fmt.clear();
            write!(self.fmt, "{w}:{i:04}:{:.3}", i as f64 / 7.0)?;
            n += 1;
            // 2 parsing (the number formatted above)
            let v: u32 = self.fmt[w.len() + 1..w.len() + 5].parse()?;
            acc += v as usize;
            n += 1;
            // 3 ctype
            acc += w.bytes().filter(|b| b.is_ascii_alphabetic()).count();
            n += 1;
            // 4 concatenation
            self.cat.push_str(w);
            n += 1;
            // 5 comparison
            if w.as_bytes() < WORDS[(i + 1) % WORDS.len()].as_bytes() {
                acc += 1;
            }
            n += 1;
            // 6 search
            if let Some(p) = self.hay.find(w) {
                acc += p;
            }
            n += 1;
            // 7 case conversion
            self.up.clear();
            self.up.push_str(w);
            self.up.make_ascii_uppercase();
            n += 1;
            // 8 copy
            self.copy.clear();
            self.copy.push_str(&self.up);
            n += 1;
        }
        black_box(acc);
        if self.cat.len() != WORDS.iter().map(|w| w.len()).sum::<usize>() {
            bail!("string concatenation lost characters");
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn string_rtns(_c: &Ctx) -> Result<Box<dyn Work>> {
    let hay = format!("the quick {} jumps over the lazy {}; {}", WORDS[3], WORDS[6], WORDS.join(" "));
    Ok(Box::new(Strings { fmt: String::new(), cat: String::new(), up: String::new(), copy: String::new(), hay, count: 0 }))
}

// ---------------------------------------------------------------- mem_rtns_1

/// Sizes 1 B, 2 B, 4 B, ..., 8 KB.
const SIZES: usize = 14;
/// Allocation operations per call: 14 mallocs + 14 callocs + 28 frees.
pub const ALLOC_OPS: usize = 4 * SIZES;

struct Alloc {
    order: Vec<usize>,
    ptrs: Vec<*mut libc::c_void>,
    count: usize,
}

impl Work for Alloc {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        self.ptrs.clear();
        for k in 0..SIZES {
            let sz = 1usize << k;
            // SAFETY: malloc/calloc with a non-zero size; a null result is
            // checked below, every pointer is freed exactly once.
            let (a, b) = unsafe { (libc::malloc(sz), libc::calloc(1, sz)) };
            self.ptrs.push(a);
            self.ptrs.push(b);
            n += 2;
        }
        let failed = self.ptrs.iter().any(|p| p.is_null());
        for &i in &self.order {
            // SAFETY: each pointer came from malloc/calloc above (or is null,
            // which free accepts) and is freed once, in the shuffled order.
            unsafe { libc::free(black_box(self.ptrs[i])) };
            n += 1;
        }
        self.ptrs.clear();
        if failed {
            bail!("malloc or calloc returned null");
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn mem_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    let mut order: Vec<usize> = (0..2 * SIZES).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(9));
    Ok(Box::new(Alloc { order, ptrs: Vec::with_capacity(2 * SIZES), count: 0 }))
}

// ---------------------------------------------------------------- mem_rtns_2

/// Block operations per call: 5 operations x 14 sizes x 8 offsets.
pub const BLOCK_OPS: usize = 5 * SIZES * 8;

struct Block {
    src: Vec<u8>,
    dst: Vec<u8>,
    count: usize,
}

impl Work for Block {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        let mut bad = false;
        for k in 0..SIZES {
            let sz = 1usize << k;
            for off in 0..8 {
                let val = (k * 8 + off) as i32 & 0x7f | 1;
                // SAFETY: both buffers are (8 KB + 16) long, so off + 1 + sz
                // stays inside; memmove handles the overlap.
                unsafe {
                    let s = self.src.as_mut_ptr().add(off);
                    let d = self.dst.as_mut_ptr().add(off);
                    libc::memset(s.cast(), val, sz);
                    libc::memcpy(d.cast(), s.cast(), sz);
                    bad |= libc::memcmp(d.cast(), s.cast(), sz) != 0;
                    bad |= libc::memchr(d.cast(), val, sz) != d.cast();
                    libc::memmove(d.add(1).cast(), d.cast(), sz);
                }
                n += 5;
            }
        }
        black_box(&mut self.dst);
        if bad {
            bail!("memcpy/memcmp/memchr disagreed");
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn mem_rtns_2(_c: &Ctx) -> Result<Box<dyn Work>> {
    let len = (1 << (SIZES - 1)) + 16;
    Ok(Box::new(Block { src: vec![0; len], dst: vec![0; len], count: 0 }))
}

// ---------------------------------------------------------------- sort_rtns_1

pub const SORT_N: usize = 10_000;
pub const SEARCHES: usize = 2_000;

struct Sort {
    orig: Vec<i32>,
    v: Vec<i32>,
    keys: Vec<i32>,
    count: usize,
}

impl Work for Sort {
    fn call(&mut self) -> Result<()> {
        self.v.clear();
        self.v.extend_from_slice(&self.orig);
        self.v.sort_unstable();
        let up = self.v.windows(2).all(|w| w[0] <= w[1]);
        self.v.sort_unstable_by(|a, b| b.cmp(a));
        let down = self.v.windows(2).all(|w| w[0] >= w[1]);
        self.v.sort_unstable();
        let up2 = self.v.windows(2).all(|w| w[0] <= w[1]);
        if !(up && down && up2) {
            bail!("sort left the integers out of order");
        }
        let found = black_box(&self.keys).iter().filter(|k| self.v.binary_search(k).is_ok()).count();
        if found != SEARCHES {
            bail!("binary search found {found} of {SEARCHES} present keys");
        }
        self.count = 1;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn sort_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let orig: Vec<i32> = (0..SORT_N).map(|_| rng.gen_range(0..1_000_000)).collect();
    let keys = (0..SEARCHES).map(|_| orig[rng.gen_range(0..SORT_N)]).collect();
    Ok(Box::new(Sort { orig, v: Vec::with_capacity(SORT_N), keys, count: 0 }))
}
