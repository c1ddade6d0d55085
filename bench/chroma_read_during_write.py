"""Can the app load a fresh Chroma view while an ingest writes the same folder? Prints what happened per round.

Embedded Chroma is read by the app and written by `ingest.py`, two processes. A view that loaded its index files
before the ingest began keeps serving safely. A view whose *first* query loads them while the ingest rewrites them
breaks things (chromadb 1.5.9, measured without any guard: the reading process died of SIGSEGV in its Rust bindings
in its first round, and another time the HNSW file `link_lists.bin` grew to 27 GB until the disk was full). So this
benchmark only runs the guarded path (`clincite.kb.vectors`: a view's first query holds a shared lock on the
writer's lock file and is refused, not crashed, while an ingest holds it) and reports that the reader survived,
how often it loaded and how often it was refused, and that the store's files stayed their size:

    python bench/chroma_read_during_write.py [--rounds 5] [--batches 8]

A reader process opens a fresh read-only `VectorStore` and queries it, again and again, while a writer process holds
the KB's writer lock (as ingest does) and upserts batches of vectors. Re-run it after upgrading chromadb.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIM = 64
SEED_VECTORS = 2000
BATCH = 1000

SIZES = f"BATCH, DIM = {BATCH}, {DIM}\n"

# Both processes: argv is [KB folder, their own argument, the project's root]
PREAMBLE = (
    SIZES
    + """
import sys, numpy as np
from pathlib import Path
sys.path.insert(0, sys.argv[-1])
from clincite.core.settings import load_settings
from clincite.kb.store import KnowledgeBase
from clincite.kb.vectors import StoreBeingWritten, VectorStore
kb_dir = Path(sys.argv[1])
settings = load_settings().model_copy(update={"kb_dir": kb_dir, "chroma_host": None})
"""
)

WRITER = (
    PREAMBLE
    + """
batches = int(sys.argv[2])
lock = KnowledgeBase(settings).writer_lock(60)
store = VectorStore(settings, kb_dir, "bench-model")
rng = np.random.default_rng(1)
for b in range(batches):
    ids = [f"b{b}-{i}" for i in range(BATCH)]
    store.add(ids, rng.random((BATCH, DIM)).tolist(), ["bench"] * BATCH)
store.close()
lock.release()
"""
)

READER = (
    PREAMBLE
    + """
writer_done = Path(sys.argv[2])
rng = np.random.default_rng(2)
loads = refused = 0
while not writer_done.exists():  # the parent creates it when the writer has ended
    view = VectorStore(settings, kb_dir, "bench-model", read_only=True)
    try:
        view.query(rng.random((1, DIM)).tolist(), 5)
        loads += 1
    except StoreBeingWritten:
        refused += 1
    view.close()
print(loads, refused)
"""
)


def seed(kb_dir: Path) -> None:
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from clincite.core.settings import load_settings
    from clincite.kb.vectors import VectorStore

    settings = load_settings().model_copy(update={"kb_dir": kb_dir, "chroma_host": None})
    store = VectorStore(settings, kb_dir, "bench-model")
    vectors = np.random.default_rng(0).random((SEED_VECTORS, DIM)).tolist()
    store.add([f"a{i}" for i in range(SEED_VECTORS)], vectors, ["bench"] * SEED_VECTORS)
    store.close()


def one_round(batches: int) -> tuple[int, str, int]:
    """(reader's exit code, what it printed: fresh loads and refusals, the store's size in MB after the round)."""
    with tempfile.TemporaryDirectory(prefix="clincite-race-") as folder:
        kb_dir = Path(folder)
        seed(kb_dir)
        done = kb_dir / "writer.done"
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(kb_dir), str(done), str(ROOT)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        subprocess.run([sys.executable, "-c", WRITER, str(kb_dir), str(batches), str(ROOT)], check=True)
        done.touch()
        output, _ = reader.communicate(timeout=120)
        size = sum(p.stat().st_size for p in kb_dir.rglob("*") if p.is_file()) // 2**20
        return reader.returncode, output.strip(), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=8, help=f"upserts of {BATCH} vectors per round")
    args = parser.parse_args()
    print("| round | reader exit | fresh loads | refused while writing | store after (MB) |\n|---|---|---|---|---|")
    crashed = 0
    for n in range(1, args.rounds + 1):
        code, output, size = one_round(args.batches)
        crashed += code != 0
        loads, refused = output.split() if output else ("–", "–")
        print(f"| {n} | {code}{' (SIGSEGV)' if code == -11 else ''} | {loads} | {refused} | {size} |", flush=True)
    print(f"\nreaders that died: {crashed} of {args.rounds}")


if __name__ == "__main__":
    main()
