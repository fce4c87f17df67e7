//! The SMT scheduler simulator (`kdelta simulate`): not written yet.
