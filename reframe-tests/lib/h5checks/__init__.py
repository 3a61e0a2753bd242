"""h5stack's small library for its ReFrame checks (reframe-tests/*/ import it)."""
