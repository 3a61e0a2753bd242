# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Files of Debian's archive, verified through its signed indexes: the .orig tarball of a
source package, and the binary packages that one package needs to run.

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

Binary packages follow the same chain through main/binary-<arch>/Packages.xz, whose
stanzas give each .deb's Filename, size and sha256: `closure` resolves a package of a
pinned version and everything its Depends and Pre-Depends name, recursively (the first
alternative the index has, by package name, else the first a package Provides; every
version constraint checked; the binary packages of the pinned package's own source at
its source version, so a library of that source never comes from another upload), and
`fetch_deb` downloads one checked against its stanza. Debian never reuses a version in
its archive: the signed index gives one sha256 per package version. A caller that knows
some dependencies are not needed where the packages are used names them (closure's skip).
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


def paragraphs(lines, fields=None):
    """The stanzas (field -> value, continuation lines joined by newlines) of an index
    (Sources, Packages), one by one; with only the named fields when fields is given."""
    current, field = {}, None
    for line in itertools.chain(lines, [""]):
        line = line.rstrip("\n")
        if not line.strip():
            if current:
                yield current
            current, field = {}, None
        elif line[0] in " \t":
            if field in current:
                current[field] += "\n" + line.strip()
        elif ":" in line:
            field, value = line.split(":", 1)
            if fields is None or field in fields:
                current[field] = value.strip()


def stanzas(lines, package):
    """The stanzas of an index whose Package is package."""
    return [s for s in paragraphs(lines) if s.get("Package") == package]


def upstream_of(version):
    """'2.2.0+repack' of '2.2.0+repack-6' (no epoch, no Debian revision)."""
    version = version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def satisfies(version, relation, wanted):
    """Whether a Debian version stands in relation (<<, <=, =, >=, >>) to wanted (dpkg's
    own comparison)."""
    return (
        subprocess.run(["dpkg", "--compare-versions", version, relation, wanted], capture_output=True).returncode == 0
    )


def _compare(a, b):
    if a == b:
        return 0
    return 1 if satisfies(a, ">>", b) else -1


def _newest(found):
    return max(found, key=functools.cmp_to_key(lambda a, b: _compare(a["Version"], b["Version"])), default=None)


def newest_revision(found, upstream):
    """The stanza of the newest Debian version whose upstream version is upstream, or None."""
    return _newest([s for s in found if upstream_of(s.get("Version", "")) == upstream])


def orig_of(stanza, package, upstream):
    """(name, sha256, size) of the stanza's .orig tarball."""
    pattern = re.compile(rf"{re.escape(package)}_{re.escape(upstream)}\.orig\.tar\.(gz|xz|bz2)")
    for line in stanza.get("Checksums-Sha256", "").splitlines():
        words = line.split()
        if len(words) == 3 and pattern.fullmatch(words[2]):
            return words[2], words[0], int(words[1])
    raise StepError(f"{package} {stanza.get('Version')}: the index lists no {package}_{upstream}.orig.tar.*")


def fetch_index(uri, suite, name, work, keyring=DEBIAN_KEYRING, keep=None, fields=None):
    """The stanzas (paragraphs, with only the named fields when fields is given) of the
    suite's index name (an .xz file the signed InRelease lists, e.g. main/source/Sources.xz)
    that keep(stanza) accepts (default: all), downloaded into work and checked against the
    sha256 and size InRelease gives."""
    release = signed_release(uri, suite, keyring, work)
    sha, size = indexed_file(release, name)
    index = os.path.join(work, os.path.basename(name))
    download(f"{uri}/dists/{suite}/{name}", index, sha, size)
    with lzma.open(index, "rt", errors="replace") as f:
        return [s for s in paragraphs(f, fields) if keep is None or keep(s)]


def fetch_orig(uri, suite, package, upstream, pinned_sha256, dest, keyring=DEBIAN_KEYRING):
    """Fetch package's .orig of upstream version into dest from the archive at uri, through
    the suite's signed index; returns the Debian version whose stanza named it."""
    with tempfile.TemporaryDirectory(dir=os.path.dirname(dest) or ".") as work:
        found = fetch_index(uri, suite, SOURCES_INDEX, work, keyring, lambda s: s.get("Package") == package)
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


# -- binary packages ------------------------------------------------------------------
def packages_index(arch):
    """The name of a suite's index of binary packages (main) of a Debian architecture."""
    return f"main/binary-{arch}/Packages.xz"


#: one alternative of a Depends-like field: name[:arch] [(relation version)]
RELATION = re.compile(r"\s*([a-z0-9][a-z0-9+.-]+)(?::[a-z0-9-]+)?\s*(?:\(\s*(<<|<=|=|>=|>>)\s*([^)\s]+)\s*\))?\s*")


def relations(field):
    """[[(name, relation, version), ...], ...] of a Depends-like field: one list per
    dependency, its alternatives in order; relation and version are None where no version
    is asked. An architecture qualifier (`:any`) is dropped."""
    result = []
    for dependency in field.split(","):
        if not dependency.strip():
            continue
        alternatives = []
        for text in dependency.split("|"):
            m = RELATION.fullmatch(text)
            if not m:
                raise StepError(f"cannot read the dependency {text.strip()!r}")
            alternatives.append(m.groups())
        result.append(alternatives)
    return result


def source_of(stanza):
    """(source package, its version) of a binary package's stanza (a binNMU's Source
    names the source version in parentheses)."""
    name, _, version = stanza.get("Source", stanza["Package"]).partition(" (")
    return name, version.rstrip(")") or stanza["Version"]


def _provided(stanza):
    """{virtual package: version or None} that a stanza's Provides names."""
    return {name: version for alts in relations(stanza.get("Provides", "")) for name, _, version in alts}


def _meets(stanza, name, relation, version):
    """Does the chosen stanza satisfy `name (relation version)`, as that package or by
    its Provides?"""
    if stanza["Package"] == name:
        return relation is None or satisfies(stanza["Version"], relation, version)
    provided = _provided(stanza)
    if name not in provided:
        return False
    return relation is None or (provided[name] is not None and satisfies(provided[name], relation, version))


def _text(alternatives):
    return " | ".join(n + (f" ({r} {v})" if r else "") for n, r, v in alternatives)


class Unresolvable(StepError):
    """The index does not list a pinned package, or cannot satisfy what it needs."""


def closure(index, package, version, suite, skip=()):
    """The stanzas of package at version and of every package it needs to run: its
    Pre-Depends and Depends, recursively, the pinned package first. index: {name: [its
    stanzas]} of the suite's Packages index. For each dependency the first alternative the
    index has is taken (its newest version that satisfies the constraint), else the first
    that a package Provides; a binary package of the pinned package's own source must be
    of its source version. A dependency all of whose alternatives are named in skip is not
    followed. Unresolvable (a StepError) when the index does not list the pinned version or
    cannot satisfy a dependency."""
    listed = index.get(package, [])
    pinned = next((s for s in listed if s.get("Version") == version), None)
    if pinned is None:
        others = ", ".join(sorted(s.get("Version", "?") for s in listed)) or "none"
        raise Unresolvable(f"{suite} does not list {package} {version} (it lists: {others})")
    own = source_of(pinned)
    chosen, order = {package: pinned}, [pinned]
    providers = None
    for stanza in order:  # grows as packages are chosen
        for field in ("Pre-Depends", "Depends"):
            for alternatives in relations(stanza.get(field, "")):
                if all(name in skip for name, _, _ in alternatives):
                    continue
                if any(_meets(c, *alt) for alt in alternatives for c in chosen.values()):
                    continue
                pick = _pick(index, alternatives, own, chosen)
                if pick is None:
                    if providers is None:
                        providers = _providers(index)
                    pick = next(
                        (p for n, r, v in alternatives for p in providers.get(n, []) if _meets(p, n, r, v)), None
                    )
                if pick is None:
                    why = _listed(index, alternatives)
                    raise Unresolvable(
                        f"{suite}: {stanza['Package']} {stanza['Version']} needs {_text(alternatives)}, "
                        f"which the index cannot satisfy ({why})"
                    )
                chosen[pick["Package"]] = pick
                order.append(pick)
    return order


def _pick(index, alternatives, own, chosen):
    """The newest stanza of the first alternative, by package name, that the index lists in
    a version that satisfies it (of the pinned source's version where it is of that
    source), or None."""
    for name, relation, version in alternatives:
        if name in chosen:
            continue
        fits = [
            s
            for s in index.get(name, [])
            if (relation is None or satisfies(s["Version"], relation, version))
            and (source_of(s)[0] != own[0] or source_of(s) == own)
        ]
        if fits:
            return _newest(fits)
    return None


def _providers(index):
    """{virtual package: [stanzas that provide it, by package name]} of an index."""
    found = {}
    for name in sorted(index):
        for stanza in index[name]:
            for virtual in _provided(stanza):
                found.setdefault(virtual, []).append(stanza)
    return found


def _listed(index, alternatives):
    versions = [f"{n} {s['Version']}" for n, _, _ in alternatives for s in index.get(n, [])]
    return "it lists " + ", ".join(versions) if versions else "it lists none of them"


#: the fields of a Packages stanza that closure and fetch_deb read
PACKAGE_FIELDS = ("Package", "Version", "Source", "Pre-Depends", "Depends", "Provides", "Filename", "Size", "SHA256")


def by_name(stanzas_):
    """{package: [its stanzas]} of a Packages index's stanzas (what closure takes)."""
    index = {}
    for stanza in stanzas_:
        index.setdefault(stanza["Package"], []).append(stanza)
    return index


def fetch_deb(uri, stanza, dest, suite):
    """Download the .deb of a Packages stanza into dest, checked against the sha256 and
    size the (signed) index gives."""
    url = f"{uri}/{urllib.parse.quote(stanza['Filename'])}"
    try:
        download(url, dest, stanza["SHA256"], int(stanza["Size"]))
    except StepError as err:
        raise StepError(f"{suite} lists {stanza['Package']} {stanza['Version']}, but {err}") from None
