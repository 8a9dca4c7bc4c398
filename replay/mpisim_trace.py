"""Read mpisim HDF5 traces from Python (h5py, numpy): schema mpisim-trace/2, which mpisim writes,
and mpisim-trace/1, which it wrote before. Layout and field meanings: replay/README.md.

    import mpisim_trace
    with mpisim_trace.open("trace.h5") as t:
        ev = t.events(0)            # numpy structured array, one row per record (fields as in /events)
        names = t.fn_names

Schema 2 keeps each rank's records as compact byte streams (a kind byte, a mask of the fields that
differ from their prediction, each such field as a zigzag LEB128 difference): this module decodes
them the way libmpisim/trace/trace_compact.c does, in pure Python (about a microsecond a record:
for looking into a trace, not for replaying it)."""
import h5py
import numpy as np

EVENT_DTYPE = np.dtype([
    ("kind", "<i4"), ("fn", "<i4"), ("t_ps", "<i8"), ("compute_ps", "<i8"), ("raw_compute_ns", "<i8"),
    ("real_entry_ns", "<i8"), ("real_exit_ns", "<i8"), ("complete_ps", "<i8"), ("comm", "<u8"),
    ("bytes", "<u8"), ("req", "<u8"), ("callsite", "<u8"), ("list_off", "<i8"), ("list_n", "<i4"),
    ("peer", "<i4"), ("tag", "<i4"), ("mode", "<i4"), ("flags", "<i4"), ("matched_source", "<i4"),
    ("matched_tag", "<i4"), ("pad", "<i4")])
RESULT_DTYPE = np.dtype([("req", "<u8"), ("complete_time", "<i8"), ("bytes", "<u8"), ("completed", "<i4"),
                         ("source", "<i4"), ("tag", "<i4"), ("cancelled", "<i4")])

FIELDS = [n for n in EVENT_DTYPE.names if n != "kind"]   # the mask's bit order
WIDE = {"t_ps", "compute_ps", "raw_compute_ns", "real_entry_ns", "real_exit_ns", "complete_ps", "comm", "bytes",
        "req", "callsite", "list_off"}
UNKNOWN = -2 ** 31
UNKNOWN_TIME = -2 ** 63
M64 = 2 ** 64 - 1
# record kinds (ms_trace_kind) and the side array a kind's list_off runs through
SLOT = {2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 6, 8: 7, 9: 8, 10: 9, 11: 10, 12: 11, 13: 12, 14: 13, 32: 14, 33: 15,
        34: 16, 65: 17, 17: 18, 18: 19}
CLASS = {3: 1, 5: 1, 17: 2, 8: 3, 9: 3, 11: 3}


def _s64(x):
    x &= M64
    return x - 2 ** 64 if x >= 2 ** 63 else x


def _s32(x):
    x = _s64(x)
    if not -2 ** 31 <= x < 2 ** 31:
        raise ValueError("damaged record: a 32-bit field out of range")
    return x


def _varint(b, i):
    x, s = 0, 0
    while True:
        if i >= len(b) or s > 63:
            raise ValueError("damaged record: varint past the stretch")
        c = b[i]
        i += 1
        x |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return x, i


def _unzig(z):
    return (z >> 1) ^ (-(z & 1) & M64)


def decode_stretch(b, n):
    """n records from the bytes of one stretch, as a list of dicts."""
    none = dict.fromkeys(FIELDS, 0)
    none.update(fn=-1, complete_ps=UNKNOWN_TIME, matched_source=UNKNOWN, matched_tag=UNKNOWN)
    prev = {}
    t = real = req = 0
    nxt = [0, 0, 0, 0]
    out, i = [], 0
    for _ in range(n):
        if i >= len(b):
            raise ValueError("damaged stretch: it ends early")
        kind = b[i]
        i += 1
        if kind == 0xFF:
            z, i = _varint(b, i)
            kind = _s64(_unzig(z))
        slot = SLOT.get(kind, 0)
        cls = CLASS.get(slot, 0)
        q = prev.get(slot, none)
        e = dict(q)
        e["kind"] = kind
        e["t_ps"] = t if q["t_ps"] else 0
        e["real_entry_ns"] = real if q["real_entry_ns"] else 0
        e["real_exit_ns"] = real if q["real_exit_ns"] else 0
        e["req"] = req + 1 if q["req"] else 0
        if cls:
            e["list_off"] = nxt[cls]
        mask, i = _varint(b, i)
        if mask >> len(FIELDS):
            raise ValueError("damaged record: unknown fields")
        complete_given = False
        for f, name in enumerate(FIELDS):
            if not mask >> f & 1:
                continue
            z, i = _varint(b, i)
            d = _unzig(z)
            if name == "complete_ps":
                complete_given = True
                e[name] = _s64(_complete_pred(q, e["t_ps"]) + d)
            elif name in WIDE:
                e[name] = (e[name] + d) & M64 if name in ("comm", "bytes", "req", "callsite") else _s64(e[name] + d)
            else:
                e[name] = _s32(e[name] + d)
        if not complete_given:
            e["complete_ps"] = _s64(_complete_pred(q, e["t_ps"]))
        prev[slot] = e
        if e["t_ps"]:
            t = e["t_ps"] & M64
        if e["real_entry_ns"]:
            real = e["real_entry_ns"] & M64
        if e["real_exit_ns"]:
            real = e["real_exit_ns"] & M64
        if e["req"]:
            req = e["req"]
        nxt[cls] = (e["list_off"] + e["list_n"] + (cls == 3)) & M64
        out.append(e)
    if i != len(b):
        raise ValueError("damaged stretch: bytes left over")
    return out


def _complete_pred(q, t_ps):
    if q["complete_ps"] == UNKNOWN_TIME:
        return UNKNOWN_TIME & M64
    return (t_ps + q["complete_ps"] - q["t_ps"]) & M64


class Trace:
    def __init__(self, path):
        self.f = h5py.File(path, "r")
        schema = self.f.attrs["schema"]
        self.schema = schema.decode() if isinstance(schema, bytes) else schema
        if self.schema not in ("mpisim-trace/1", "mpisim-trace/2"):
            raise ValueError("%s: schema %s is not one this module reads" % (path, self.schema))
        self.nranks = int(self.f.attrs["nranks"])
        self.fn_names = [s.decode() if isinstance(s, bytes) else s for s in self.f["fn_names"][:]] \
            if "fn_names" in self.f else []
        if self.schema == "mpisim-trace/2":
            self.heads = self.f["rank_heads"][:]
            self.stretch = int(self.f.attrs["stretch_records"])
            self.offsets = self.f["stretches"][:]

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def head(self, rank):
        """The rank's attributes: rank, pid, cosim, truncated, missing, start_real_ns, hostname."""
        if self.schema == "mpisim-trace/1":
            return dict(self.f["ranks/%d" % rank].attrs)
        h = self.heads[rank]
        return {k: (h[k].decode() if k == "hostname" else int(h[k]))
                for k in ("rank", "pid", "cosim", "truncated", "missing", "start_real_ns", "hostname")}

    def events(self, rank):
        """The rank's records as a numpy array of EVENT_DTYPE."""
        if self.schema == "mpisim-trace/1":
            return self.f["ranks/%d/events" % rank][:]
        h = self.heads[rank]
        nev, first = int(h["nev"]), int(h["first_stretch"])
        rec = self.f["records"]
        rows = []
        for j in range((nev + self.stretch - 1) // self.stretch):
            a, b = int(self.offsets[first + j]), int(self.offsets[first + j + 1])
            n = min(self.stretch, nev - j * self.stretch)
            rows += decode_stretch(bytes(rec[a:b]), n)
        out = np.zeros(nev, EVENT_DTYPE)
        for name in EVENT_DTYPE.names:
            out[name] = [r[name] for r in rows]
        return out

    def lists(self, rank):
        """Request ids of waits and counts of v-collectives (events' list_off/list_n index them)."""
        if self.schema == "mpisim-trace/1":
            return self.f["ranks/%d/lists" % rank][:]
        h = self.heads[rank]
        a, n = int(h["lists_first"]), int(h["nlists"])
        return self.f["lists"][a:a + n]

    def results(self, rank):
        """Results of recorded resumes, a numpy array of RESULT_DTYPE."""
        if self.schema == "mpisim-trace/1":
            return self.f["ranks/%d/results" % rank][:]
        h = self.heads[rank]
        a, n = int(h["results_first"]), int(h["nresults"])
        sz = RESULT_DTYPE.itemsize
        return np.frombuffer(bytes(self.f["results"][a * sz:(a + n) * sz]), RESULT_DTYPE)

    def text(self, rank):
        """The rank's NUL-terminated texts as bytes."""
        if self.schema == "mpisim-trace/1":
            return bytes(self.f["ranks/%d/text" % rank][:].astype("u1"))
        h = self.heads[rank]
        a, n = int(h["text_first"]), int(h["ntext"])
        return bytes(self.f["text"][a:a + n].astype("u1"))


def open(path):  # noqa: A001 (as h5py.File)
    return Trace(path)
