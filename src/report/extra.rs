//! Tables a caller builds itself and hands to the renderers: a study's
//! published-against-measured tables, for instance. The renderers know
//! nothing of where the cells came from; every cell is already text.

use serde::Serialize;

/// One table of text cells, with lines before and after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtraTable {
    /// The table's title ("Table 1: LMbench latencies (us)").
    pub title: String,
    /// Lines printed above the table (the substitute configuration, units).
    pub before: Vec<String>,
    /// Column headings.
    pub header: Vec<String>,
    /// Rows of cells, each as long as `header`.
    pub rows: Vec<Vec<String>>,
    /// Lines printed below the table (the direction summary, unavailable rows).
    pub after: Vec<String>,
}
