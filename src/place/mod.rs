//! Real SMT-aware placement (`kdelta place`): not written yet.
