//! The order a round visits a benchmark's parameter points in: the values a
//! user asked to compare run next to each other.
//!
//! A sweep expands parameters in the benchmark's declared order, the first
//! outermost. Run in that order, comparing `--param impl=libc,tuned` would
//! take every `impl=libc` point before the first `impl=tuned` one, so the
//! two sides of each comparison would run minutes apart and whatever drifted
//! on the machine in between (another tenant's memory traffic) would enter
//! the ratio. Running them side by side removes that drift, not faster
//! swings (docs/mem.md measures what remains).
//!
//! So a round nests the swept parameters differently from the expansion:
//! outermost those swept by default (a benchmark's own size list, `cache=`),
//! in declared order; innermost those the user gave on the command line.
//! Among those, a parameter whose values name alternatives (a choice such as
//! `impl=libc,tuned`, a flag, a path) runs inside one whose values lie on a
//! scale (`size=64,1K`): the user compares the first and sweeps the second,
//! whichever has more values. Within each kind the fewest values run
//! innermost and, on ties, the parameter declared first (a benchmark
//! declares first what it is compared on: `impl`, `model`). Configurations
//! stay innermost of everything.
//! Only the running order changes: results are stored, and reports read,
//! in expansion order.

use crate::model::params::Params;
use std::collections::BTreeMap;

/// A benchmark's parameters as a round nests them.
pub(super) struct Axes<'a> {
    /// Every parameter's name, in declared order.
    pub(crate) declared: Vec<&'a str>,
    /// Those the user set on the command line.
    pub(crate) given: Vec<&'a str>,
    /// Those whose values name alternatives rather than points on a scale
    /// (`ParamKind::names_alternatives`).
    pub(crate) alternatives: Vec<&'a str>,
}

/// The order of round `r` (0-based) over `n` points: forward on even
/// rounds, backward on odd ones (A B C, C B A, A B C, ...).
pub(super) fn round_order(n: usize, r: usize) -> Vec<usize> {
    if r % 2 == 0 {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    }
}

/// The items of one benchmark's group (their parameter points, in
/// expansion order) as a permutation: the order a round visits them in.
pub(super) fn visit_order(items: &[&Params], axes: &Axes) -> Vec<usize> {
    let (nest, values) = nesting(items, axes);
    let key = |p: &Params| -> Vec<usize> {
        nest.iter().map(|n| p.0.get(*n).and_then(|v| values[n].iter().position(|x| x == v)).unwrap_or(0)).collect()
    };
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_cached_key(|&i| key(items[i]));
    order
}

/// The compared parameter: the innermost of the nesting when the user gave
/// it (`impl` in `--param impl=libc,tuned --param size=1K,1M`), else none.
pub(super) fn compared<'a>(items: &[&Params], axes: &Axes<'a>) -> Option<&'a str> {
    let (nest, _) = nesting(items, axes);
    nest.last().copied().filter(|n| axes.given.contains(n))
}

/// `order` (a visit order) cut into ties: runs of consecutive items that
/// differ only in `param`, so the sides of one comparison can share a
/// worker and take turns sample by sample (`measure::sampler::turns`).
/// Items that lack `param` stand alone.
pub(super) fn ties(items: &[&Params], order: &[usize], param: &str) -> Vec<Vec<usize>> {
    let rest = |i: usize| -> Option<Vec<(&String, &String)>> {
        items[i].0.contains_key(param).then(|| items[i].0.iter().filter(|(k, _)| k.as_str() != param).collect())
    };
    let mut out: Vec<Vec<usize>> = Vec::new();
    for &i in order {
        match out.last_mut() {
            Some(tie) if rest(i).is_some() && rest(tie[0]) == rest(i) => tie.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// Parameters swept, outer to inner, with each one's distinct values in
/// order of first appearance.
fn nesting<'a, 'p>(items: &[&'p Params], axes: &Axes<'a>) -> (Vec<&'a str>, BTreeMap<&'a str, Vec<&'p str>>) {
    let Axes { declared, given, alternatives } = axes;
    let mut values: BTreeMap<&'a str, Vec<&'p str>> = BTreeMap::new();
    for p in items {
        for name in declared {
            if let Some(v) = p.0.get(*name) {
                let e = values.entry(name).or_default();
                if !e.contains(&v.as_str()) {
                    e.push(v.as_str());
                }
            }
        }
    }
    let swept: Vec<&str> = declared.iter().copied().filter(|n| values.get(n).is_some_and(|v| v.len() > 1)).collect();
    // Outer to inner: defaults in declared order, then given parameters on a
    // scale, then given alternatives, each by descending number of values
    // and, on ties, the one declared first innermost.
    let mut nest: Vec<&str> = swept.iter().copied().filter(|n| !given.contains(n)).collect();
    let mut inner: Vec<&str> = swept.iter().copied().filter(|n| given.contains(n)).collect();
    inner.reverse();
    inner.sort_by_key(|n| (alternatives.contains(n), std::cmp::Reverse(values[n].len())));
    nest.extend(inner);
    (nest, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        Params(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    /// The expansion of `impl` x `size` x `cache`, first outermost.
    fn expansion(imps: &[&str], sizes: &[&str], caches: &[&str]) -> Vec<Params> {
        let mut v = Vec::new();
        for i in imps {
            for s in sizes {
                for c in caches {
                    v.push(params(&[("impl", i), ("size", s), ("cache", c), ("offset", "0")]));
                }
            }
        }
        v
    }

    /// The mem family's parameters: `impl` and `cache` name alternatives,
    /// `size` and `offset` lie on a scale.
    fn axes<'a>(given: &[&'a str]) -> Axes<'a> {
        Axes {
            declared: vec!["impl", "size", "cache", "offset"],
            given: given.to_vec(),
            alternatives: vec!["impl", "cache"],
        }
    }

    fn labels(items: &[Params], order: &[usize]) -> Vec<String> {
        order
            .iter()
            .map(|&i| format!("{}/{}/{}", items[i].0["impl"], items[i].0["size"], items[i].0["cache"]))
            .collect()
    }

    #[test]
    fn the_compared_values_run_side_by_side() {
        let items = expansion(&["libc", "tuned"], &["64", "1K", "1M"], &["warm", "cold"]);
        let refs: Vec<&Params> = items.iter().collect();
        let order = visit_order(&refs, &axes(&["impl"]));
        assert_eq!(
            labels(&items, &order),
            [
                "libc/64/warm",
                "tuned/64/warm",
                "libc/64/cold",
                "tuned/64/cold",
                "libc/1K/warm",
                "tuned/1K/warm",
                "libc/1K/cold",
                "tuned/1K/cold",
                "libc/1M/warm",
                "tuned/1M/warm",
                "libc/1M/cold",
                "tuned/1M/cold",
            ]
        );
        // A permutation: every item once.
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..items.len()).collect::<Vec<_>>());
    }

    #[test]
    fn among_given_parameters_the_fewest_values_run_innermost() {
        let items = expansion(&["naive", "libc", "tuned"], &["64", "1K"], &["warm"]);
        let refs: Vec<&Params> = items.iter().collect();
        // Both on a scale: size has 2 values, offset 3, so size is innermost.
        let scaled: Vec<Params> = ["0", "1", "2"]
            .iter()
            .flat_map(|o| ["64", "1K"].map(|z| params(&[("impl", "libc"), ("size", z), ("offset", o)])))
            .collect();
        let scaled_refs: Vec<&Params> = scaled.iter().collect();
        let order = visit_order(&scaled_refs, &axes(&["offset", "size"]));
        let shown: Vec<String> =
            order.iter().map(|&i| format!("{}/{}", scaled[i].0["offset"], scaled[i].0["size"])).collect();
        assert_eq!(shown, ["0/64", "0/1K", "1/64", "1/1K", "2/64", "2/1K"]);
        // Alternatives run inside a scale whatever the counts: impl has 3
        // values and size 2, and the three impls run side by side.
        let order = visit_order(&refs, &axes(&["impl", "size"]));
        assert_eq!(
            labels(&items, &order),
            ["naive/64/warm", "libc/64/warm", "tuned/64/warm", "naive/1K/warm", "libc/1K/warm", "tuned/1K/warm"]
        );
        assert_eq!(compared(&refs, &axes(&["size", "impl"])), Some("impl"));
        // Nothing given: the expansion order itself.
        assert_eq!(visit_order(&refs, &axes(&[])), (0..items.len()).collect::<Vec<_>>());
        // One point, or none.
        assert_eq!(visit_order(&refs[..1], &axes(&["impl"])), vec![0]);
        assert!(visit_order(&[], &axes(&["impl"])).is_empty());
    }

    #[test]
    fn the_sides_of_each_comparison_form_a_tie() {
        let items = expansion(&["libc", "tuned"], &["64", "1K"], &["warm", "cold"]);
        let refs: Vec<&Params> = items.iter().collect();
        assert_eq!(compared(&refs, &axes(&["impl"])), Some("impl"));
        // Given with as many values as impl, size is swept, not compared.
        assert_eq!(compared(&refs, &axes(&["size", "impl"])), Some("impl"));
        // Two alternatives given: the fewer values are compared.
        assert_eq!(compared(&refs, &axes(&["impl", "cache"])), Some("impl"));
        // Only a scale given: it is the comparison.
        assert_eq!(compared(&refs, &axes(&["size"])), Some("size"));
        // Swept only by default: no comparison asked for.
        assert_eq!(compared(&refs, &axes(&[])), None);
        let order = visit_order(&refs, &axes(&["impl"]));
        let t = ties(&refs, &order, "impl");
        let shown: Vec<Vec<String>> = t.iter().map(|tie| labels(&items, tie)).collect();
        assert_eq!(shown.len(), 4);
        assert_eq!(shown[0], ["libc/64/warm", "tuned/64/warm"]);
        assert_eq!(shown[3], ["libc/1K/cold", "tuned/1K/cold"]);
        // In expansion order the two sides are never adjacent: no tie has two.
        let apart: Vec<usize> = (0..items.len()).collect();
        assert!(ties(&refs, &apart, "impl").iter().all(|t| t.len() == 1));
        // Items without the parameter stand alone.
        let bare = [params(&[("size", "1")]), params(&[("size", "1")])];
        let bare: Vec<&Params> = bare.iter().collect();
        assert_eq!(ties(&bare, &[0, 1], "impl"), vec![vec![0], vec![1]]);
    }

    #[test]
    fn rounds_alternate_direction() {
        assert_eq!(round_order(3, 0), vec![0, 1, 2]);
        assert_eq!(round_order(3, 1), vec![2, 1, 0]);
        assert_eq!(round_order(3, 2), vec![0, 1, 2]);
        // No point always follows the same neighbour: over two rounds each
        // point has two different predecessors (or none, once).
        let seq: Vec<usize> = (0..4).flat_map(|r| round_order(4, r)).collect();
        for p in 0..4 {
            let before: Vec<usize> = seq.windows(2).filter(|w| w[1] == p).map(|w| w[0]).collect();
            let mut distinct = before.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(distinct.len() >= 2 || before.len() < 2, "point {p} follows only {distinct:?}");
        }
    }
}
