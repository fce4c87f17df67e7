//! `kdelta study`'s arguments.

use super::parse::{label, meta_pair};
use crate::report::Format;
use crate::study::{StudyName, Variant, STUDIES};

/// `list`, or one study.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StudyArg {
    List,
    One(StudyName),
}

impl clap::ValueEnum for StudyArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            StudyArg::List,
            StudyArg::One(StudyName::Ht2003),
            StudyArg::One(StudyName::Threads2004),
            StudyArg::One(StudyName::Sched2002),
            StudyArg::One(StudyName::Tuning2001),
        ]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            StudyArg::List => Some(
                clap::builder::PossibleValue::new("list")
                    .help("the studies, what each needs, what this machine gives, how long each takes"),
            ),
            StudyArg::One(n) => {
                let d = STUDIES.iter().find(|d| d.name == *n)?;
                Some(clap::builder::PossibleValue::new(d.id).help(d.what))
            }
        }
    }
}

/// Run one of the classic studies on this machine and print it in the
/// study's own shape, the published figures beside today's.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct StudyArgs {
    /// `list`, or the study to run.
    #[arg(value_enum)]
    pub(crate) name: StudyArg,
    /// Fewer samples and fewer points (ht-2003 --quick: under 10 minutes on 2 CPUs).
    #[arg(long)]
    pub(crate) quick: bool,
    /// A label for the study's run (find it later by it; `--resume` picks the run with this label).
    #[arg(long, short = 'l', value_parser = label)]
    pub(crate) label: Option<String>,
    /// Continue the newest incomplete run of this study (same --quick, --variant and label): only its missing points run.
    #[arg(long)]
    pub(crate) resume: bool,
    /// ht-2003's SMT pair: faithful (noht1 against ht1, one core as the study had) or whole (noht against ht).
    #[arg(long, value_enum, default_value_t = Variant::Faithful)]
    pub(crate) variant: Variant,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// Metadata stored with the study's run (commit=abc123), as `kdelta run --meta`;
    /// with --resume, the run keeps its own and a --meta given must equal it.
    #[arg(long, value_name = "KEY=VALUE", value_parser = meta_pair)]
    pub(crate) meta: Vec<(String, String)>,
    /// For tests only: a tiny plan (the first three benchmarks of the
    /// study's first part, three samples each), so a test can interrupt and
    /// resume a whole study through the binary in seconds.
    #[arg(long, hide = true)]
    pub(crate) tiny_plan_for_tests: bool,
}
