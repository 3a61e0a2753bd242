# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Recording: strace's output of a workload (`strace -f -y -e write=all`) as an
operation log."""

import codecs
import os
import re
from dataclasses import dataclass, field

from h5stack.verify.crash.model import ROOT_INO, DirState, Model, Op

MARK = re.compile(r"^h5fuzz: op (\d+):")


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
