# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
