# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5stack's small library for its ReFrame checks (reframe-tests/*/ import it)."""
