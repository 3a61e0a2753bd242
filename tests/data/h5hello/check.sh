# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# A ctest script read from the package tree, as the packages' test scripts are.
test -x "$1" && echo "script ran"
