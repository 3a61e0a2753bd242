# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The .orig tarball of a Debian source package, verified through the archive's signed index.

The chain of trust is the archive's own:
  dists/<suite>/InRelease   clearsigned by the archive's keys: checked by `gpgv` against
                            Debian's archive keyring (the one apt uses)
  main/source/Sources.xz    its sha256 and size are in the signed InRelease
  the package's stanzas     every revision the suite lists, each with the sha256 and size
                            of its files
  <package>_<upstream>.orig.tar.*  downloaded from the stanza's Directory, checked against
                            the sha256 and size the index gives
The Debian revision is not pinned: the archive moves on (a revision listed today may be
gone tomorrow), while the .orig of one upstream version is the same file in every
revision; the newest revision the suite lists for that upstream version is taken, and
its .orig must still carry the caller's pinned sha256. Neither the .dsc nor the
.debian.tar.* is fetched: the unpatched upstream tree is what gets built.
Valid-Until is not enforced: an older index can only name another revision of the same
pinned .orig.
"""

import functools
import hashlib
import itertools
import lzma
import os
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request

from h5stack.base.ui import StepError

#: Debian's archive signing keys (the keyring apt's sources name with Signed-By)
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
SOURCES_INDEX = "main/source/Sources.xz"
TIMEOUT = 30  # seconds without an answer before a download is given up


def download(url, dest, sha256=None, size=None):
    """Download url into dest (atomically), checking the sha256 and size when given."""
    tmp = dest + ".part"
    h = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as resp, open(tmp, "wb") as out:
            for block in iter(lambda: resp.read(1 << 20), b""):
                h.update(block)
                out.write(block)
    except OSError as err:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise StepError(f"{url}: not reachable ({err})") from None
    got = os.path.getsize(tmp)
    if (sha256 and h.hexdigest() != sha256) or (size is not None and got != size):
        os.remove(tmp)
        raise StepError(
            f"{url}: sha256 {h.hexdigest()} ({got} bytes) differs from the expected {sha256} ({size} bytes)"
        )
    os.replace(tmp, dest)


def signed_release(uri, suite, keyring, work):
    """The text of <uri>/dists/<suite>/InRelease as signed by a key of keyring (gpgv)."""
    if not os.path.isfile(keyring):
        raise StepError(f"no archive keyring {keyring} (Debian's package debian-archive-keyring)")
    if not shutil.which("gpgv"):
        raise StepError("gpgv is not installed (Debian's package gpgv)")
    signed = os.path.join(work, "InRelease")
    download(f"{uri}/dists/{suite}/InRelease", signed)
    text = os.path.join(work, "Release")
    proc = subprocess.run(
        ["gpgv", "--keyring", keyring, "--output", text, signed], capture_output=True, text=True
    )  # fmt: skip
    if proc.returncode != 0:
        why = " ".join(proc.stderr.split())[-300:]
        raise StepError(f"{uri}/dists/{suite}/InRelease: no good signature by {keyring}: {why}")
    with open(text, errors="replace") as f:
        return f.read()


def indexed_file(release, name):
    """(sha256, size) that a Release text's SHA256 section gives for the file name."""
    section = re.search(r"^SHA256:\n((?:[ \t].*\n?)*)", release, re.M)
    for line in (section.group(1) if section else "").splitlines():
        words = line.split()
        if len(words) == 3 and words[2] == name:
            return words[0], int(words[1])
    raise StepError(f"the signed Release lists no {name}")


def stanzas(lines, package):
    """The stanzas (field -> value, continuation lines joined by newlines) of a Sources
    index whose Package is package."""
    result, current, field = [], {}, None
    for line in itertools.chain(lines, [""]):
        line = line.rstrip("\n")
        if not line.strip():
            if current.get("Package") == package:
                result.append(current)
            current, field = {}, None
        elif line[0] in " \t" and field:
            current[field] += "\n" + line.strip()
        elif ":" in line:
            field, value = line.split(":", 1)
            current[field] = value.strip()
    return result


def upstream_of(version):
    """'2.2.0+repack' of '2.2.0+repack-6' (no epoch, no Debian revision)."""
    version = version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def _compare(a, b):
    if a == b:
        return 0
    gt = subprocess.run(["dpkg", "--compare-versions", a, "gt", b], capture_output=True).returncode == 0
    return 1 if gt else -1


def newest_revision(found, upstream):
    """The stanza of the newest Debian version whose upstream version is upstream, or None."""
    matching = [s for s in found if upstream_of(s.get("Version", "")) == upstream]
    return max(matching, key=functools.cmp_to_key(lambda a, b: _compare(a["Version"], b["Version"])), default=None)


def orig_of(stanza, package, upstream):
    """(name, sha256, size) of the stanza's .orig tarball."""
    pattern = re.compile(rf"{re.escape(package)}_{re.escape(upstream)}\.orig\.tar\.(gz|xz|bz2)")
    for line in stanza.get("Checksums-Sha256", "").splitlines():
        words = line.split()
        if len(words) == 3 and pattern.fullmatch(words[2]):
            return words[2], words[0], int(words[1])
    raise StepError(f"{package} {stanza.get('Version')}: the index lists no {package}_{upstream}.orig.tar.*")


def fetch_orig(uri, suite, package, upstream, pinned_sha256, dest, keyring=DEBIAN_KEYRING):
    """Fetch package's .orig of upstream version into dest from the archive at uri, through
    the suite's signed index; returns the Debian version whose stanza named it."""
    with tempfile.TemporaryDirectory(dir=os.path.dirname(dest) or ".") as work:
        release = signed_release(uri, suite, keyring, work)
        sha, size = indexed_file(release, SOURCES_INDEX)
        index = os.path.join(work, "Sources.xz")
        download(f"{uri}/dists/{suite}/{SOURCES_INDEX}", index, sha, size)
        with lzma.open(index, "rt", errors="replace") as f:
            found = stanzas(f, package)
    stanza = newest_revision(found, upstream)
    if stanza is None:
        listed = ", ".join(s.get("Version", "?") for s in found) or "none"
        raise StepError(f"{suite} lists no revision of {package} {upstream} (it lists: {listed})")
    name, sha, size = orig_of(stanza, package, upstream)
    if sha != pinned_sha256:
        raise StepError(
            f"{package} {stanza['Version']} ({suite}): the index gives {name} the sha256 {sha}, not the pinned one"
        )
    url = f"{uri}/{urllib.parse.quote(stanza.get('Directory', ''))}/{urllib.parse.quote(name)}"
    try:
        download(url, dest, sha, size)
    except StepError as err:
        raise StepError(f"{suite} lists {package} {stanza['Version']}, but {err}") from None
    return stanza["Version"]
