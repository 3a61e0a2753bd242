# A ctest script read from the package tree, as the packages' test scripts are.
test -x "$1" && echo "script ran"
