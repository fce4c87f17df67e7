pub fn fmt_num(v: f64) -> String { format!("{v}") }
