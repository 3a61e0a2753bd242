# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame's side: the programming environments the site configs use (environs,
spackviews), the perflog layout (perflog), the HTML report (report, report_summary),
running ReFrame (regression).

Imports base/, stacks/ and machine/; not spack/ or verify/. The site configs import
this room.
"""
