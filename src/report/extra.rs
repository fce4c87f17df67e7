//! Tables a caller builds itself and hands to the renderers: a study's
//! published-against-measured tables, for instance. The renderers know
//! nothing of where the cells came from; every cell is already text.

use serde::Serialize;

/// One table of text cells, with lines before and after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ExtraTable {
    /// The table's title ("Table 1: LMbench latencies (us)").
    pub(crate) title: String,
    /// Lines printed above the table (the substitute configuration, units).
    pub(crate) before: Vec<String>,
    /// Column headings.
    pub(crate) header: Vec<String>,
    /// Rows of cells, each as long as `header`.
    pub(crate) rows: Vec<Vec<String>>,
    /// Lines printed below the table (the direction summary, unavailable rows).
    pub(crate) after: Vec<String>,
}
