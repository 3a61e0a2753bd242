# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The operation log of a recorded workload, the file system it describes (what is live
and what is durable), and the crash states of the persistence model at each point."""

import hashlib
import os
import random
import shutil
from dataclasses import dataclass, field

PAGE = 4096
ROOT_INO = 1
SINGLES = 4  # pending changes of a file lost one at a time, at most (first, last, between)


# -- the operation log -------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    """One file-system operation. Inodes are numbers (ROOT_INO: the scratch directory);
    kinds: mkdir, create (ino new in dir as name), write (ino, off, data), truncate (ino to
    off), fsync (ino: a file or a directory), rename and exchange (dir/name, dir2/name2),
    unlink (dir/name, a file or a directory), mark (text: h5fuzz's "op N" line)."""

    kind: str
    ino: int = 0
    dir: int = 0
    name: str = ""
    dir2: int = 0
    name2: str = ""
    off: int = 0
    data: bytes = b""
    text: str = ""

    def describe(self):
        what = {
            "write": f"write ino {self.ino} [{self.off}, {self.off + len(self.data)})",
            "truncate": f"truncate ino {self.ino} to {self.off}",
            "fsync": f"fsync ino {self.ino}",
            "mkdir": f"mkdir {self.name} (ino {self.ino}) in ino {self.dir}",
            "create": f"create {self.name} (ino {self.ino}) in ino {self.dir}",
            "unlink": f"unlink {self.name} in ino {self.dir}",
            "rename": f"rename {self.name} (ino {self.dir}) to {self.name2} (ino {self.dir2})",
            "exchange": f"exchange {self.name} (ino {self.dir}) and {self.name2} (ino {self.dir2})",
            "mark": self.text,
        }
        return what[self.kind]


# -- the file system: what is live and what is durable ------------------------------
@dataclass
class FileState:
    durable: bytes = b""
    pending: list = field(default_factory=list)  # write and truncate ops since the last fsync
    live: bytearray = field(default_factory=bytearray)


@dataclass
class DirState:
    durable: dict = field(default_factory=dict)  # name -> ino
    pending: list = field(default_factory=list)  # ("link", name, ino) ("unlink", name) ("rename"/"exchange", a, b)
    live: dict = field(default_factory=dict)


def apply_data(content, op, keep=None):
    """content (bytearray) with a write or truncate applied; keep=(lo, hi) keeps only those
    bytes of a write (a torn write)."""
    if op.kind == "truncate":
        del content[op.off :]
        content.extend(bytes(max(0, op.off - len(content))))
        return content
    lo, hi = keep or (op.off, op.off + len(op.data))
    if len(content) < hi:
        content.extend(bytes(hi - len(content)))
    content[lo:hi] = op.data[lo - op.off : hi - op.off]
    return content


def apply_entry(entries, change):
    """A directory's entries with one pending change applied."""
    kind, a = change[0], change[1]
    if kind == "link":
        entries[a] = change[2]
    elif kind == "unlink":
        entries.pop(a, None)
    elif kind == "rename" and a in entries:
        entries[change[2]] = entries.pop(a)
    elif kind == "exchange" and a in entries and change[2] in entries:
        entries[a], entries[change[2]] = entries[change[2]], entries[a]
    return entries


class Model:
    """The file system after a prefix of the log: each file's and directory's durable
    state and the changes pending since its last fsync."""

    def __init__(self, initial=None):
        self.files, self.dirs = {}, {ROOT_INO: DirState()}
        for path, content in sorted((initial or {}).items()):  # a tree that is durable already
            self._add_initial(path, content)

    def _add_initial(self, path, content):
        parent, name = self.lookup_parent(path)
        ino = max([ROOT_INO, *self.files, *self.dirs]) + 1
        if content is None:
            self.dirs[ino] = DirState()
        else:
            self.files[ino] = FileState(bytes(content), [], bytearray(content))
        self.dirs[parent].durable[name] = self.dirs[parent].live[name] = ino

    def lookup_parent(self, path):
        parts = [p for p in path.split("/") if p]
        d = ROOT_INO
        for part in parts[:-1]:
            d = self.dirs[d].live[part]
        return d, parts[-1]

    def apply(self, op):
        getattr(self, f"_{op.kind}")(op)

    def _dir_change(self, d, change):
        self.dirs[d].pending.append(change)
        apply_entry(self.dirs[d].live, change)

    def _mkdir(self, op):
        self.dirs[op.ino] = DirState()
        self._dir_change(op.dir, ("link", op.name, op.ino))

    def _create(self, op):
        self.files[op.ino] = FileState()
        self._dir_change(op.dir, ("link", op.name, op.ino))

    def _write(self, op):
        f = self.files[op.ino]
        f.pending.append(op)
        apply_data(f.live, op)

    _truncate = _write

    def _fsync(self, op):
        if op.ino in self.files:
            f = self.files[op.ino]
            f.durable, f.pending = bytes(f.live), []
        elif op.ino in self.dirs:
            d = self.dirs[op.ino]
            d.durable, d.pending = dict(d.live), []

    def _unlink(self, op):
        self._dir_change(op.dir, ("unlink", op.name))

    def _rename(self, op):
        if op.dir == op.dir2:
            self._dir_change(op.dir, ("rename", op.name, op.name2))
        else:  # two directories: each change persists with its own directory
            ino = self.dirs[op.dir].live[op.name]
            self._dir_change(op.dir, ("unlink", op.name))
            self._dir_change(op.dir2, ("link", op.name2, ino))

    def _exchange(self, op):
        if op.dir == op.dir2:
            self._dir_change(op.dir, ("exchange", op.name, op.name2))
        else:
            a, b = self.dirs[op.dir].live[op.name], self.dirs[op.dir2].live[op.name2]
            self._dir_change(op.dir, ("link", op.name, b))
            self._dir_change(op.dir2, ("link", op.name2, a))

    def _mark(self, op):
        pass


def model_at(ops, point, initial=None):
    """The model after the first `point` operations."""
    m = Model(initial)
    for op in ops[:point]:
        m.apply(op)
    return m


# -- crash states ---------------------------------------------------------------------
@dataclass(frozen=True)
class Choice:
    """What of the pending changes a crash state keeps: by default all of them (what a
    killed process leaves); `lost`: (ino, i) pending file changes that vanish; `torn`:
    (ino, i, lo, hi) the bytes of a pending write that persist; `dirs`: (ino, k) only the
    first k pending changes of a directory persist; nothing=True: no pending change."""

    label: str
    lost: frozenset = frozenset()
    torn: tuple = ()
    dirs: tuple = ()
    nothing: bool = False


def tear_ranges(op):
    """The parts of a write that may persist alone: its first and its last 4 KiB-aligned
    piece (none when it lies within one page)."""
    lo, hi = op.off, op.off + len(op.data)
    first, last = (lo // PAGE + 1) * PAGE, (hi - 1) // PAGE * PAGE
    if first >= hi:
        return []
    return [(lo, first), (last, hi)] if last > lo else [(lo, first)]


def spread(n, most=SINGLES):
    """At most `most` of range(n): the first, the last and evenly between."""
    if n <= most:
        return list(range(n))
    return sorted({round(k * (n - 1) / (most - 1)) for k in range(most)})


EVERYTHING = Choice("every pending change persisted")  # state e0: what a killed process leaves


def enumerate_choices(model):
    """The bounded set of crash states at one crash point: everything pending persisted;
    nothing; per directory each proper prefix of its pending changes; per file all its
    pending writes lost, each one lost alone (later ones persisting: out of order) and the
    last one torn (the single losses: at most SINGLES per file, spread over them)."""
    choices = [EVERYTHING, Choice("no pending change persisted", nothing=True)]
    for ino, d in sorted(model.dirs.items()):
        for k in range(len(d.pending)):
            choices.append(
                Choice(f"dir ino {ino}: {k} of {len(d.pending)} pending entries persisted", dirs=((ino, k),))
            )
    for ino, f in sorted(model.files.items()):
        n = len(f.pending)
        if not n:
            continue
        choices.append(
            Choice(f"file ino {ino}: its {n} pending changes lost", lost=frozenset((ino, i) for i in range(n)))
        )
        if n > 1:
            choices += [
                Choice(f"file ino {ino}: pending change {i} of {n} lost", lost=frozenset({(ino, i)})) for i in spread(n)
            ]
        last = f.pending[-1]
        if last.kind == "write":
            for lo, hi in tear_ranges(last):
                choices.append(
                    Choice(f"file ino {ino}: last write torn, [{lo}, {hi}) persisted", torn=((ino, n - 1, lo, hi),))
                )
    return choices


def sample_choice(model, seed):
    """A random crash state (replayable from seed): each pending file change persists with
    probability 1/2, one write maybe torn, each directory a random prefix."""
    rng = random.Random(seed)
    lost, torn, dirs = set(), [], []
    for ino, f in sorted(model.files.items()):
        lost |= {(ino, i) for i in range(len(f.pending)) if rng.random() < 0.5}
        kept = [i for i in range(len(f.pending)) if (ino, i) not in lost and f.pending[i].kind == "write"]
        ranges = tear_ranges(f.pending[kept[-1]]) if kept else []
        if ranges and rng.random() < 0.3:
            torn.append((ino, kept[-1], *rng.choice(ranges)))
    for ino, d in sorted(model.dirs.items()):
        if d.pending:
            dirs.append((ino, rng.randint(0, len(d.pending))))
    return Choice(f"random state (seed {seed})", frozenset(lost), tuple(torn), tuple(dirs))


def choice_for(model, state):
    """The crash state named `state` ("e<N>" or "r<N>") at a crash point."""
    if state.startswith("r"):
        return sample_choice(model, int(state[1:]))
    choices = enumerate_choices(model)
    n = int(state[1:])
    if not 0 <= n < len(choices):
        raise ValueError(f"state {state}: this crash point has states e0..e{len(choices) - 1}")
    return choices[n]


def file_content(f, ino, choice):
    content = bytearray(f.durable)
    if choice.nothing:
        return bytes(content)
    torn = {(t[0], t[1]): (t[2], t[3]) for t in choice.torn}
    for i, op in enumerate(f.pending):
        if (ino, i) not in choice.lost:
            apply_data(content, op, torn.get((ino, i)))
    return bytes(content)


def dir_entries(d, ino, choice):
    entries = dict(d.durable)
    if choice.nothing:
        return entries
    k = dict(choice.dirs).get(ino, len(d.pending))
    for change in d.pending[:k]:
        apply_entry(entries, change)
    return entries


def materialise(model, choice):
    """The crash state as {relative path: bytes, or None for a directory}."""
    tree, todo, seen = {}, [(ROOT_INO, "")], set()
    while todo:
        ino, prefix = todo.pop()
        seen.add(ino)
        for name, child in sorted(dir_entries(model.dirs[ino], ino, choice).items()):
            path = f"{prefix}{name}"
            if child in model.dirs and child not in seen:
                tree[path] = None
                todo.append((child, path + "/"))
            elif child in model.files:
                tree[path] = file_content(model.files[child], child, choice)
    return tree


def tree_digest(tree):
    h = hashlib.sha256()
    for path, content in sorted(tree.items()):
        h.update(path.encode("utf-8", "surrogateescape") + b"\0")
        h.update(b"D" if content is None else hashlib.sha256(content).digest())
    return h.hexdigest()


def write_tree(tree, where):
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    for path, content in sorted(tree.items()):
        full = os.path.join(where, path)
        if content is None:
            os.makedirs(full, exist_ok=True)
        else:
            with open(full, "wb") as f:
                f.write(content)


def read_tree(where):
    """A directory tree as {relative path: bytes or None}: the durable start of a log."""
    tree = {}
    for dirpath, dirnames, filenames in os.walk(where):
        rel = os.path.relpath(dirpath, where)
        for d in dirnames:
            tree[os.path.normpath(os.path.join(rel, d))] = None
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as f:
                tree[os.path.normpath(os.path.join(rel, name))] = f.read()
    return tree


def crash_points(ops):
    """The crash points: after each operation that changes the file system or its
    durability (marks are none)."""
    return [i + 1 for i, op in enumerate(ops) if op.kind != "mark"]
