# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack crash`: the multifile commit protocol against power loss (after ALICE and
ParaCrash).

1. Record: a workload's file-system operations, taken from `strace -f -y -e write=all`
   (every rank of a multifile write session, or `h5mf merge`), become an operation log
   (Op): creates, writes with their bytes, truncates, fsyncs, renames, unlinks, mkdirs,
   copies, in the order the kernel saw them. strace and not an LD_PRELOAD shim: it sees
   the kernel boundary, where persistence is decided (calls libc makes internally and
   the MPI library's own included), and needs nothing built per stack.
2. Enumerate: after each operation (a crash point) a bounded set of crash states under
   the persistence model (packages/hdf5-vfd-multifile/README.md): the data of a file up
   to its last fsync persists, later writes may be lost, torn at 4 KiB or persist out of
   order; a create, rename or unlink persists once its directory is fsynced. Exhaustive
   for short logs, seeded samples for long ones; a state is named by its crash point and
   "e<N>" (the N-th enumerated) or "r<N>" (random, seed N) and is replayed from them.
3. Materialise each state in a scratch directory and judge it (Oracle): `h5mf info` and
   `verify` give a verdict and never die by a signal or hang; `h5mf merge --partial`
   gives the file of the last committed epoch, which h5fuzz checks against the model of
   the operations before that commit; no epoch the writer had made durable is lost; an
   interrupted merge leaves the intact directory or the whole new file, and merging the
   same path again gives the whole file with nothing left beside it.
"""

import codecs
import hashlib
import os
import random
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field

import yaml

from h5stack.base import paths

PAGE = 4096
ROOT_INO = 1
TIMEOUT = 60  # seconds for one h5mf or h5fuzz run on a crash state: longer is a hang
SINGLES = 4  # pending changes of a file lost one at a time, at most (first, last, between)
EXHAUSTIVE_POINTS = 400  # logs with more crash points are sampled
REGRESSIONS = os.path.join(paths.ROOT, "tests", "data", "crash_regressions.yaml")
TRACED = (
    "open,openat,creat,write,pwrite64,writev,pwritev,pwritev2,ftruncate,truncate,fsync,fdatasync,"
    "rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,copy_file_range,ioctl,close,"
    "dup,dup2,dup3,fcntl,clone,clone3,fork,vfork"
)
MARK = re.compile(r"^h5fuzz: op (\d+):")


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


# -- recording: strace's output as an operation log ----------------------------------
SYSCALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|0x[0-9a-f]+|\?)(.*)$", re.S)
FD_ARG = re.compile(r"^(-?\d+)(?:<(.*)>)?$", re.S)


def split_args(text):
    """strace's argument list split at its top-level commas (quotes and brackets kept)."""
    args, depth, cur, quoted, i = [], 0, [], False, 0
    while i < len(text):
        c = text[i]
        if quoted:
            cur.append(c)
            if c == "\\":
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            cur.append(c)
        elif c in "[{(<":
            depth += 1
            cur.append(c)
        elif c in "]})>":
            depth -= 1
            cur.append(c)
        elif c == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if cur or args:
        args.append("".join(cur).strip())
    return args


def c_string(arg):
    """A quoted strace string argument as text (its C escapes decoded)."""
    body = arg[1 : arg.rindex('"')] if arg.startswith('"') else arg
    return codecs.escape_decode(body.encode("latin-1"))[0].decode("utf-8", "surrogateescape")


def dump_bytes(lines):
    """The bytes of strace's hex dump lines (` | 00000  48 35 ...  H5.. |`)."""
    out = bytearray()
    for line in lines:
        if line.startswith(" | "):
            hexpart = line[3:].split(None, 1)[1][:49]
            out += bytes.fromhex("".join(t for t in hexpart.split() if len(t) == 2))
    return bytes(out)


@dataclass
class Syscall:
    pid: int
    name: str
    args: list
    ret: int
    dump: list = field(default_factory=list)


def parse_strace(lines):
    """strace -f output as complete Syscalls in order (unfinished calls joined with their
    resumption; hex dump lines attached to the call before them)."""
    unfinished, last = {}, None
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith(" | ") or line.startswith(" * "):
            if last is not None:
                last.dump.append(line)
            continue
        pid_text, _, rest = line.partition(" ")
        if not pid_text.isdigit():
            continue
        pid, rest = int(pid_text), rest.lstrip()
        if rest.endswith("<unfinished ...>"):
            unfinished[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        m = re.match(r"^<\.\.\. (\w+) resumed>\s?(.*)$", rest, re.S)
        if m:
            rest = unfinished.pop(pid, m.group(1) + "(") + m.group(2)
            if rest.startswith(m.group(1) + "(,"):
                rest = m.group(1) + "(" + rest[len(m.group(1)) + 2 :]
        if last is not None:
            yield last
            last = None
        s = SYSCALL.match(rest)
        if s and s.group(3) != "?":
            ret = int(s.group(3), 0)
            last = Syscall(pid, s.group(1), split_args(s.group(2)), ret)
    if last is not None:
        yield last


@dataclass
class Handle:
    ino: int
    pos: int = 0
    append: bool = False


class Recorder:
    """Turns the syscalls of a traced run into an operation log of what happened under
    `root` (everything else is ignored), with its own fd tables (per process; threads
    share theirs) and its own view of the namespace (paths are resolved when the call
    happened, not when strace printed them)."""

    def __init__(self, root, initial=None):
        self.root = os.path.realpath(root)
        self.model = Model(initial)
        self.ops, self.tables, self.marks = [], {}, set()
        self.next_ino = max([ROOT_INO, *self.model.files, *self.model.dirs]) + 1

    # -- helpers ---------------------------------------------------------------------
    def _emit(self, op):
        self.model.apply(op)
        self.ops.append(op)

    def _table(self, pid):
        return self.tables.setdefault(pid, {})

    def _fd(self, pid, arg):
        m = FD_ARG.match(arg)
        return self._table(pid).get(int(m.group(1))) if m else None

    def _rel(self, path):
        """path relative to the root, or None outside it."""
        path = os.path.normpath(path)
        if path == self.root:
            return ""
        return path[len(self.root) + 1 :] if path.startswith(self.root + "/") else None

    def _resolve(self, pid, dirarg, patharg):
        """(dir ino, name) of a path argument, or None outside the root."""
        path = c_string(patharg)
        if not path.startswith("/"):
            h = self._fd(pid, dirarg) if dirarg and not dirarg.startswith("AT_FDCWD") else None
            if h is not None:
                return self._walk(h.ino, path)
            m = re.match(r"^AT_FDCWD<(.*)>$", dirarg or "", re.S)
            base = m.group(1) if m else os.getcwd()
            path = os.path.join(base, path)
        rel = self._rel(path)
        return None if rel is None or rel == "" else self._walk(ROOT_INO, rel)

    def _walk(self, d, rel):
        parts = [p for p in rel.split("/") if p and p != "."]
        for part in parts[:-1]:
            d = self.model.dirs.get(d, DirState()).live.get(part)
            if d not in self.model.dirs:
                return None
        return (d, parts[-1]) if parts else None

    def _lookup(self, where):
        d, name = where
        return self.model.dirs[d].live.get(name)

    # -- the calls -------------------------------------------------------------------
    def feed(self, sc):
        if sc.ret < 0:
            return
        handler = getattr(self, f"_sys_{sc.name}", None)
        if handler:
            handler(sc)

    def _open(self, sc, dirarg, patharg, flags):
        root = self._rel(c_string(patharg)) == "" if patharg.startswith('"/') else False
        where = None if root else self._resolve(sc.pid, dirarg, patharg)
        if root:
            self._table(sc.pid)[sc.ret] = Handle(ROOT_INO)
            return
        if where is None:
            return
        ino = self._lookup(where)
        if ino is None and "O_CREAT" in flags:
            ino = self.next_ino
            self.next_ino += 1
            self._emit(Op("create", ino=ino, dir=where[0], name=where[1]))
        elif ino in self.model.files and "O_TRUNC" in flags and self.model.files[ino].live:
            self._emit(Op("truncate", ino=ino, off=0))
        if ino is not None:
            self._table(sc.pid)[sc.ret] = Handle(ino, append="O_APPEND" in flags)

    def _sys_openat(self, sc):
        self._open(sc, sc.args[0], sc.args[1], sc.args[2])

    def _sys_open(self, sc):
        self._open(sc, None, sc.args[0], sc.args[1])

    def _sys_creat(self, sc):
        self._open(sc, None, sc.args[0], "O_CREAT|O_TRUNC")

    def _sys_close(self, sc):
        m = FD_ARG.match(sc.args[0])
        if m:
            self._table(sc.pid).pop(int(m.group(1)), None)

    def _dup_to(self, sc, target):
        h = self._fd(sc.pid, sc.args[0])
        if h is not None:
            self._table(sc.pid)[target] = h

    def _sys_dup(self, sc):
        self._dup_to(sc, sc.ret)

    _sys_dup2 = _sys_dup3 = _sys_dup

    def _sys_fcntl(self, sc):
        if sc.args[1].startswith("F_DUPFD"):
            self._dup_to(sc, sc.ret)

    def _sys_clone(self, sc):
        shared = "CLONE_FILES" in " ".join(sc.args)
        parent = self._table(sc.pid)
        self.tables[sc.ret] = parent if shared else dict(parent)

    _sys_clone3 = _sys_fork = _sys_vfork = _sys_clone

    def _write(self, sc, off):
        h = self._fd(sc.pid, sc.args[0])
        data = dump_bytes(sc.dump)[: sc.ret]
        if h is None:
            self._mark(data)
            return
        if h.ino not in self.model.files:
            return
        if off is None:
            off = len(self.model.files[h.ino].live) if h.append else h.pos
            h.pos = off + len(data)
        if data:
            self._emit(Op("write", ino=h.ino, off=off, data=data))

    def _mark(self, data):
        m = MARK.match(data.decode("utf-8", "replace"))
        if m and int(m.group(1)) not in self.marks:
            self.marks.add(int(m.group(1)))
            self.ops.append(Op("mark", text=f"h5fuzz op {m.group(1)}"))

    def _sys_write(self, sc):
        self._write(sc, None)

    _sys_writev = _sys_write

    def _sys_pwrite64(self, sc):
        self._write(sc, int(sc.args[3]))

    def _sys_pwritev(self, sc):
        self._write(sc, int(sc.args[3]))

    _sys_pwritev2 = _sys_pwritev

    def _sys_ftruncate(self, sc):
        h = self._fd(sc.pid, sc.args[0])
        if h is not None and h.ino in self.model.files:
            self._emit(Op("truncate", ino=h.ino, off=int(sc.args[1])))

    def _sys_truncate(self, sc):
        where = self._resolve(sc.pid, None, sc.args[0])
        ino = where and self._lookup(where)
        if ino in self.model.files:
            self._emit(Op("truncate", ino=ino, off=int(sc.args[1])))

    def _sys_fsync(self, sc):
        h = self._fd(sc.pid, sc.args[0])
        if h is not None:
            self._emit(Op("fsync", ino=h.ino))

    _sys_fdatasync = _sys_fsync

    def _rename(self, sc, a, b, flags=""):
        src, dst = a, b
        if src is None or dst is None or self._lookup(src) is None:
            return
        kind = "exchange" if "RENAME_EXCHANGE" in flags else "rename"
        self._emit(Op(kind, dir=src[0], name=src[1], dir2=dst[0], name2=dst[1]))

    def _sys_rename(self, sc):
        self._rename(sc, self._resolve(sc.pid, None, sc.args[0]), self._resolve(sc.pid, None, sc.args[1]))

    def _sys_renameat(self, sc):
        a = self._resolve(sc.pid, sc.args[0], sc.args[1])
        self._rename(sc, a, self._resolve(sc.pid, sc.args[2], sc.args[3]))

    def _sys_renameat2(self, sc):
        a = self._resolve(sc.pid, sc.args[0], sc.args[1])
        self._rename(sc, a, self._resolve(sc.pid, sc.args[2], sc.args[3]), sc.args[4])

    def _unlink(self, where):
        if where is not None and self._lookup(where) is not None:
            self._emit(Op("unlink", dir=where[0], name=where[1]))

    def _sys_unlink(self, sc):
        self._unlink(self._resolve(sc.pid, None, sc.args[0]))

    _sys_rmdir = _sys_unlink

    def _sys_unlinkat(self, sc):
        self._unlink(self._resolve(sc.pid, sc.args[0], sc.args[1]))

    def _mkdir(self, where):
        if where is not None:
            self._emit(Op("mkdir", ino=self.next_ino, dir=where[0], name=where[1]))
            self.next_ino += 1

    def _sys_mkdir(self, sc):
        self._mkdir(self._resolve(sc.pid, None, sc.args[0]))

    def _sys_mkdirat(self, sc):
        self._mkdir(self._resolve(sc.pid, sc.args[0], sc.args[1]))

    def _copy(self, src, src_off, dst, dst_off, n):
        if dst is None or dst.ino not in self.model.files:
            return
        content = self.model.files[src.ino].live if src is not None and src.ino in self.model.files else b""
        data = bytes(content[src_off : src_off + n]).ljust(n, b"\0")
        self._emit(Op("write", ino=dst.ino, off=dst_off, data=data))

    def _sys_copy_file_range(self, sc):
        src, dst = self._fd(sc.pid, sc.args[0]), self._fd(sc.pid, sc.args[2])
        src_off = offset_arg(sc.args[1], src)
        dst_off = offset_arg(sc.args[3], dst)
        self._copy(src, src_off, dst, dst_off, sc.ret)
        for h, arg, off in ((src, sc.args[1], src_off), (dst, sc.args[3], dst_off)):
            if h is not None and arg == "NULL":
                h.pos = off + sc.ret

    def _sys_ioctl(self, sc):
        dst = self._fd(sc.pid, sc.args[0])
        if sc.args[1] == "FICLONE":
            src = self._fd(sc.pid, sc.args[2])
            n = len(self.model.files[src.ino].live) if src is not None and src.ino in self.model.files else 0
            self._copy(src, 0, dst, 0, n)
        elif sc.args[1] == "FICLONERANGE":
            f = dict(re.findall(r"(\w+)=(\d+)", sc.args[2]))
            src = self._table(sc.pid).get(int(f.get("src_fd", -1)))
            self._copy(src, int(f["src_offset"]), dst, int(f["dest_offset"]), int(f["src_length"]))


def offset_arg(arg, handle):
    """copy_file_range's offset argument: `[0 => 4096]` gives 0; NULL: the fd's position."""
    m = re.match(r"^\[(\d+)", arg)
    if m:
        return int(m.group(1))
    return handle.pos if handle is not None else 0


def record_strace(path, root, initial=None):
    """The operation log of a strace output file."""
    rec = Recorder(root, initial)
    with open(path, errors="surrogateescape") as f:
        for sc in parse_strace(f):
            rec.feed(sc)
    return rec.ops


# -- workloads ---------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    """An h5fuzz workload (seed, operations, ranks) written through the multifile plugin
    with sync=on ("write": the session is recorded), or with the default sync=off
    ("killed": judged only in the state a killed process leaves, every change it made
    persisted, which is all sync=off promises), or reconstructed in place afterwards
    ("merge": `h5mf merge` is recorded; "pmerge": the parallel merge, `mpiexec -n RANKS
    h5mf merge`, is recorded, every process); or written by RANKS clients into the DSM of
    two servers whose action dumps each closed file ("dump": the servers are recorded).
    "hwrite" and "hmerge" are "write" and "merge" in the head layout (layout=head: out.h5
    a small HDF5 file naming its directory out.h5.h5mf)."""

    def writes(self):
        """A write session is recorded (not a merge)."""
        return self.kind in ("write", "killed", "hwrite")

    def head(self):
        """Written in the head layout."""
        return self.kind in ("hwrite", "hmerge")

    def body(self):
        """The multifile directory, relative to the scratch root."""
        return "out.h5.h5mf" if self.head() else "out.h5"

    kind: str
    seed: int
    ops: int
    ranks: int = 1
    grammar: int = 1

    @classmethod
    def parse(cls, spec):
        """KIND:SEED:OPS:RANKS[:GRAMMAR], e.g. write:3:10:1; the reason when it is not one."""
        parts = spec.split(":")
        if len(parts) not in (4, 5) or parts[0] not in KINDS or not all(p.isdigit() for p in parts[1:]):
            raise ValueError(f"workload {spec!r}: expected {'|'.join(KINDS)}:SEED:OPS:RANKS[:GRAMMAR]")
        w = cls(parts[0], *(int(p) for p in parts[1:]))
        if w.ops < 1 or w.ranks < 1 or not 1 <= w.grammar <= GRAMMARS:
            raise ValueError(f"workload {spec!r}: OPS and RANKS are at least 1, GRAMMAR is 1 to {GRAMMARS}")
        return w

    def spec(self):
        return f"{self.kind}:{self.seed}:{self.ops}:{self.ranks}" + (f":{self.grammar}" if self.grammar != 1 else "")

    def fuzz_args(self, ops=None):
        return [
            "--seed",
            str(self.seed),
            "--ops",
            str(self.ops if ops is None else ops),
            "--grammar",
            str(self.grammar),
        ]


KINDS = ("write", "killed", "merge", "pmerge", "dump", "hwrite", "hmerge")
DUMP = re.compile(r"dump_\d+\.h5")  # the final names of the DSM servers' dumps
HEAD_SLOT = 2048  # where a head holds its slot, which begins with "H5MFHEAD" (src/mf_head.h)
GRAMMARS = 6  # h5fuzz's grammars (./h5stack fuzz --grammar)


@dataclass
class Recording:
    workload: Workload
    ops: list
    initial: dict  # the durable tree the log starts from
    seconds: float = 0.0


def strace_command(trace):
    return ["strace", "-f", "-qq", "-y", "-s", "80", "-e", f"trace={TRACED}", "-e", "write=all", "-o", trace]


def run_checked(cmd, env, cwd, what):
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{(proc.stdout + proc.stderr)[-2000:]}"
        )
    return proc


def writer_env(env, sync=True, head=False):
    config = ("sync=on" if sync else "sync=off") + (";layout=head" if head else "")
    return dict(env, HDF5_DRIVER="multifile", HDF5_DRIVER_CONFIG=config)


def record(workload, env, work):
    """Run the workload under strace in work/root; its operation log."""
    t0 = time.monotonic()
    root = os.path.join(work, "root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    root = os.path.realpath(root)
    trace, target = os.path.join(work, "strace.txt"), os.path.join(root, "out.h5")
    write = ["mpiexec", "-n", str(workload.ranks), "h5fuzz", target, *workload.fuzz_args(), "--driver", "default"]
    write += ["--no-verify", "--verbose"]
    initial = {}
    if workload.kind == "dump":
        server = [
            "h5dsm-server",
            "--size",
            "16m",
            "--distribution",
            "linear",
            "--action",
            f"dump:{root}/dump_{{step}}.h5",
        ]
        client = ["h5fuzz", "mem.h5", *workload.fuzz_args(), "--driver", "dsm", "--no-verify"]
        client += ["--all-ranks"] if workload.grammar >= 5 else []  # the DSM's clients open files together
        cmd = ["mpiexec", "-n", "2", *server, ":", "-n", str(workload.ranks), *client]
        run_checked(strace_command(trace) + cmd, env, work, "the traced DSM session")
    elif workload.writes():
        wenv = writer_env(env, sync=workload.kind != "killed", head=workload.head())
        run_checked(strace_command(trace) + write, wenv, work, "the traced write session")
    else:
        run_checked(write, writer_env(env, head=workload.head()), work, "the write session")
        initial = read_tree(root)
        merge = ["h5mf", "merge", "-q", target]
        if workload.kind == "pmerge":
            merge = ["mpiexec", "-n", str(workload.ranks), *merge]
        run_checked(strace_command(trace) + merge, env, work, "the traced merge")
    ops = record_strace(trace, root, initial)
    return Recording(workload, ops, initial, time.monotonic() - t0)


def commits(ops, initial=None):
    """{committed epochs C: operations K}: the metafile saying C was renamed into place
    after h5fuzz announced operation K-1 (so the model of the first K operations is the
    golden file of C; each commit is made by a flush, a close or a reopen, which change
    no data); and for each crash point the C the writer had made durable (the rename,
    then an fsync of the directory)."""
    golden, durable, model, last_mark, pending, claimed = {}, [], Model(initial), -1, {}, 0
    for op in ops:
        if op.kind == "mark":
            last_mark = int(op.text.split()[-1])
        elif op.kind == "rename" and op.name2 == "metafile":
            text = model.files[model.dirs[op.dir].live[op.name]].live.decode("latin-1")
            m = re.search(r"^committed (\d+)$", text, re.M)
            if m:
                golden[int(m.group(1))] = last_mark + 1
                pending[op.dir2] = int(m.group(1))
        elif op.kind == "fsync" and op.ino in pending:
            claimed = max(claimed, pending.pop(op.ino))
        model.apply(op)
        durable.append(claimed)
    return golden, durable


# -- the oracle ----------------------------------------------------------------------
@dataclass
class Run:
    rc: int  # the exit status; negative: killed by that signal; None: a hang
    text: str


def run_tool(cmd, env, cwd):
    try:
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, errors="replace")
    except subprocess.TimeoutExpired:
        return Run(None, f"no end after {TIMEOUT} s")
    return Run(proc.returncode, (proc.stdout + proc.stderr).strip())


def tool_fault(cmd, run):
    """A run that died by a signal or hung: a fault whatever the state."""
    if run.rc is None:
        return f"hang: {' '.join(cmd)}: {run.text}"
    if run.rc < 0:
        return f"signal {-run.rc}: {' '.join(cmd)}: {run.text[-500:]}"
    return None


def metafile_facts(tree, body="out.h5"):
    """(committed, complete) of the crash state's metafile (in the directory body), or
    None when it has none or an unreadable one."""
    text = tree.get(f"{body}/metafile")
    if not isinstance(text, bytes):
        return None
    text = text.decode("latin-1")
    committed, state = re.search(r"^committed (\d+)$", text, re.M), re.search(r"^state (\w+)$", text, re.M)
    if not committed or not state:
        return None
    return int(committed.group(1)), state.group(1) == "complete"


class Oracle:
    """Judges crash states of one recorded workload; verdicts of identical states (the
    same tree) and model checks of identical files are cached."""

    def __init__(self, recording, env, work):
        self.w = recording.workload
        self.env = {k: v for k, v in env.items() if k not in ("HDF5_DRIVER", "HDF5_DRIVER_CONFIG")}
        self.work = work
        self.golden, self.durable = commits(recording.ops, recording.initial)
        if self.w.kind == "dump":  # every dump as the servers wrote it
            ops = recording.ops
            self.dumps = materialise(model_at(ops, len(ops), recording.initial), EVERYTHING)
        self._verdicts, self._models = {}, {}
        self.judged = 0

    def judge(self, tree, point):
        """None, or the fault of the crash state `tree` at crash point `point`."""
        key = (tree_digest(tree), self.durable[point - 1] if self.w.writes() else 0)
        if key not in self._verdicts:
            self.judged += 1
            where = os.path.join(self.work, "state")
            write_tree(tree, where)
            if self.w.kind == "dump":
                judge = self._judge_dump
            else:
                judge = self._judge_write if self.w.writes() else self._judge_merge
            self._verdicts[key] = judge(tree, os.path.join(where, "out.h5"), key[1])
        return self._verdicts[key]

    def _h5mf(self, *args):
        cmd = ["h5mf", *args]
        run = run_tool(cmd, self.env, self.work)
        return run, tool_fault(cmd, run)

    def _inspect(self, d, complete):
        """info and verify (--partial for a directory whose writer did not close it) of a
        directory: (verify's run, a fault or None)."""
        info, fault = self._h5mf("info", d)
        if fault:
            return info, fault
        return self._h5mf("verify", d, *([] if complete else ["--partial"]))

    def _judge_write(self, tree, d, claimed):
        facts = metafile_facts(tree, self.w.body())
        verify, fault = self._inspect(d, facts is not None and facts[1])
        if fault:
            return fault
        if facts is None:
            body = self.w.body()
            gone = f"no directory {body}" if body not in tree else f"no readable metafile in {body}"
            return f"lost: {claimed} epoch(s) were committed durably, the state has {gone}" if claimed else None
        committed, complete = facts
        if committed == 0:  # nothing to reconstruct: any verdict but a crash or a hang
            return None
        if verify.rc != 0:
            return f"damaged: h5mf verify: {verify.text[-500:]}"
        if committed < claimed:
            return f"lost: {claimed} epochs were committed durably, the metafile says {committed}"
        return self._check_merge(d, committed, complete)

    def _check_merge(self, d, committed, complete):
        out = os.path.join(self.work, "merged.h5")
        if os.path.exists(out):
            os.unlink(out)
        run, fault = self._h5mf("merge", "-q", *([] if complete else ["--partial"]), d, "-o", out)
        if fault or run.rc != 0:
            return fault or f"merge: {'h5mf merge' if complete else 'h5mf merge --partial'} fails: {run.text[-500:]}"
        ops = self.golden.get(committed)
        if ops is None:
            return f"differs: the metafile says {committed} epochs, no commit of the session said so"
        return self._model_check(out, ops)

    def _model_check(self, path, ops):
        with open(path, "rb") as f:
            key = (hashlib.sha256(f.read()).hexdigest(), ops)
        if key not in self._models:
            cmd = ["h5fuzz", path, *self.w.fuzz_args(ops), "--verify-only", "--writer-ranks", str(self.w.ranks)]
            cmd += ["--driver", "sec2"]
            run = run_tool(cmd, self.env, self.work)
            bad = tool_fault(cmd, run) or (run.rc != 0 and f"{run.text[-800:]}")
            self._models[key] = f"differs: not the file of the first {ops} operations: {bad}" if bad else None
        return self._models[key]

    def _judge_merge(self, tree, d, _claimed):
        """An interrupted merge leaves the intact old directory or the complete new file,
        and merging the same path again gives the whole file with nothing left beside it."""
        what = tree.get("out.h5", "missing")
        if what == "missing":
            return "neither: out.h5 is gone (neither the old directory nor the new file)"
        if isinstance(what, bytes) and not (self.w.head() and what[HEAD_SLOT : HEAD_SLOT + 8] == b"H5MFHEAD"):
            bad = self._model_check(d, self.w.ops)
            if bad:
                return f"neither: the new file is not whole: {bad}"
            return self._merge_again(d)
        verify, fault = self._inspect(d, True)
        facts = metafile_facts(tree, self.w.body())
        if fault:
            return fault
        if verify.rc != 0 or facts is None or not facts[1]:
            what = "the head of a directory" if self.w.head() else "a directory"
            return f"neither: out.h5 is {what} that is not the intact old one: {verify.text[-500:]}"
        return self._merge_again(d)

    def _judge_dump(self, tree, _d, _claimed):
        """A dump of the DSM's server under its final name is the whole dump (it is written
        to a temporary name, synced, renamed and its directory synced), or absent."""
        for path, content in sorted(tree.items()):
            whole = self.dumps.get(path)
            if DUMP.fullmatch(path) and content != whole:
                size = "no such dump at the end" if whole is None else f"{len(content)} of {len(whole)} bytes"
                return f"torn: {path} under its final name is not the whole dump ({size})"
        return None

    def _merge_again(self, d):
        """What a user does after the crash: `h5mf merge out.h5` once more. It must exit 0
        with the whole file at out.h5 and remove what the interrupted merge left beside it
        (its partial output, the old directory swapped out, or that directory emptied)."""
        run, fault = self._h5mf("merge", "-q", d)
        if fault or run.rc != 0:
            return fault or f"again: h5mf merge of the crash state fails: {run.text[-500:]}"
        left = sorted(set(os.listdir(os.path.dirname(d))) - {"out.h5"})
        if left:
            return f"again: h5mf merge left {', '.join(left)} beside the file"
        if not os.path.isfile(d):
            return "again: h5mf merge exited 0 but out.h5 is not a file"
        bad = self._model_check(d, self.w.ops)
        return bad and f"again: {bad}"


# -- exploring -----------------------------------------------------------------------
@dataclass
class Fault:
    stack: str
    workload: Workload
    point: int
    state: str
    message: str
    choice: str
    op: str

    def kind(self):
        return self.message.split(":", 1)[0]

    def signature(self):
        return (self.workload.kind, re.sub(r"\d+", "N", self.message.splitlines()[0])[:160])

    def replay(self):
        return f"./h5stack crash --stack {self.stack} --workload {self.workload.spec()} --point {self.point} --state {self.state}"

    def report(self):
        return "\n".join(
            [
                f"FAULT ({self.kind()}): {self.workload.spec()} crash point {self.point} (after: {self.op}), "
                f"state {self.state} ({self.choice})",
                self.message.rstrip(),
                f"replay: {self.replay()}",
            ]
        )


@dataclass
class Tally:
    workloads: int = 0
    points: int = 0
    states: int = 0
    judged: int = 0
    faults: dict = field(default_factory=dict)  # signature -> [first Fault, count]

    def add(self, fault):
        """Count the fault; True when it is of a new kind (to be printed)."""
        entry = self.faults.setdefault(fault.signature(), [fault, 0])
        entry[1] += 1
        return entry[1] == 1

    def summary(self, seconds):
        n = sum(c for _, c in self.faults.values())
        return (
            f"crash: {self.workloads} workload(s), {self.points} crash point(s), {self.states} state(s) tried "
            f"({self.judged} distinct judged), {n} faulty state(s) of {len(self.faults)} kind(s) in {seconds:.0f} s"
        )


def states_at(model, point, seed, exhaustive, samples, killed=False):
    """(state name, Choice) to try at a crash point; killed: only e0, every pending change
    persisted (what a killed process leaves)."""
    if killed:
        return [("e0", EVERYTHING)]
    if exhaustive:
        return [(f"e{i}", c) for i, c in enumerate(enumerate_choices(model))]
    rng = random.Random(f"{seed}:{point}")
    names = [f"r{rng.randrange(1 << 30)}" for _ in range(samples)]
    return [(n, sample_choice(model, int(n[1:]))) for n in names]


def explore(recording, oracle, stack, tally, deadline=None, seed=0, samples=4, on_fault=None, most=EXHAUSTIVE_POINTS):
    """Every crash point of the log and its enumerated states when it has at most `most`
    points; else a seeded sample of `most` points and `samples` random states at each.
    Each state judged; faults into the tally."""
    ops = recording.ops
    points = crash_points(ops)
    exhaustive = len(points) <= most
    if not exhaustive:
        points = sorted(random.Random(seed).sample(points, most))
    model, done = Model(recording.initial), 0
    killed = recording.workload.kind == "killed"
    tally.workloads += 1
    for point in points:
        while done < point:
            model.apply(ops[done])
            done += 1
        if deadline and time.monotonic() > deadline:
            break
        tally.points += 1
        for name, choice in states_at(model, point, seed, exhaustive, samples, killed):
            tally.states += 1
            message = oracle.judge(materialise(model, choice), point)
            if message:
                fault = Fault(stack, recording.workload, point, name, message, choice.label, ops[point - 1].describe())
                if tally.add(fault) and on_fault:
                    on_fault(fault)
    tally.judged += oracle.judged


def replay_state(recording, oracle, stack, point, state):
    """One crash state, materialised in the oracle's work directory: its Fault or None."""
    points = crash_points(recording.ops)
    if point not in points:
        raise ValueError(f"point {point}: {recording.workload.spec()} has crash points {points[0]}..{points[-1]}")
    model = model_at(recording.ops, point, recording.initial)
    choice = choice_for(model, state)
    message = oracle.judge(materialise(model, choice), point)
    op = recording.ops[point - 1].describe()
    return Fault(stack, recording.workload, point, state, message, choice.label, op) if message else None


def regressions(path=REGRESSIONS):
    """The crash states kept as regression cases (tests/data/crash_regressions.yaml)."""
    with open(path) as f:
        entries = yaml.safe_load(f) or []
    for e in entries:
        if not {"workload", "point", "state", "fault"} <= set(e):
            raise ValueError(f"{path}: an entry needs workload, point, state and fault: {e}")
    return entries


@dataclass(frozen=True)
class Options:
    """What `./h5stack crash` was asked (typed; built from the command line by commands/crash.py)."""

    stack: str = "mpich-hdf5-1.14"
    seeds: int = 2
    seconds: float = 0.0  # 0: no time limit
    ops: int = 8
    ranks: int = 1
    first_seed: int = 1
    merge: bool = True
    workload: str = ""  # one workload (a replay), KIND:SEED:OPS:RANKS
    point: int = 0  # with workload and state: one crash state
    state: str = ""
    workroot: str = ""
    points: int = EXHAUSTIVE_POINTS  # crash points per workload: a log with more is sampled


def workloads(opts):
    """The workloads of a run: each seed written with sync=on, with sync=off (killed) and
    in the head layout, and (with merge) merged, by as many processes as ranks wrote it
    too when they are more than one, and merged in the head layout."""
    if opts.workload:
        return [Workload.parse(opts.workload)]
    merges = ("merge", *(("pmerge",) if opts.ranks > 1 else ()), "hmerge") if opts.merge else ()
    kinds = ("write", "killed", "hwrite", *merges)
    return [
        Workload(k, s, opts.ops, opts.ranks)
        for s in range(opts.first_seed, opts.first_seed + opts.seeds)
        for k in kinds
    ]


def stack_environment(stack):
    from h5stack.stacks.plan import Stacks
    from h5stack.verify.fuzz import stack_env

    desc = Stacks().get(stack).description()
    if not desc:
        raise RuntimeError(f"stack {stack} is not built: ./h5stack setup {stack}")
    return stack_env(desc)


def run(opts, say=print):
    """./h5stack crash: record, enumerate, judge; a summary. 1 when a fault was found."""
    if shutil.which("strace") is None:
        raise RuntimeError("strace is missing (Debian: strace, in requirements/debian.txt)")
    env = stack_environment(opts.stack)
    workroot = opts.workroot or os.path.join(paths.home(), "crash")
    t0, tally = time.monotonic(), Tally()
    deadline = t0 + opts.seconds if opts.seconds else None
    for w in workloads(opts):
        if deadline and time.monotonic() > deadline:
            break
        work = os.path.join(workroot, w.spec().replace(":", "-"))
        os.makedirs(work, exist_ok=True)
        rec = record(w, env, work)
        oracle = Oracle(rec, env, work)
        if opts.point:
            fault = replay_state(rec, oracle, opts.stack, opts.point, opts.state)
            say(fault.report() if fault else f"crash: {w.spec()} point {opts.point} state {opts.state}: ok")
            say(f"crash: the state is in {os.path.join(work, 'state')}")
            return 1 if fault else 0
        say(f"crash: {w.spec()}: {len(crash_points(rec.ops))} crash points recorded in {rec.seconds:.1f} s")
        explore(
            rec, oracle, opts.stack, tally, deadline, seed=w.seed, on_fault=lambda f: say(f.report()), most=opts.points
        )
    say(tally.summary(time.monotonic() - t0))
    return 1 if tally.faults else 0
