"""Regenerate crush/crush.db and crush/crush.db-wal.gz: a cut-down copy of a real Crush store.

Source: the shared data folder's crush/quay (github.com/jbpratt/quay, a fork of quay/quay, `.crush/` at
3ac4428e78b4873aacc5ff0c4f094c4a56f54653, Apache-2.0, see
LICENSE-quay). Kept: session 5ee78d3f (the PROJQUAY-9272 issue, all 17 rows) in the
checkpointed database, and the first 7 rows of its sub-agent session toolu_vrtx_01LW... in the
WAL, so a test can tell the two apart; tool results longer than 1,500 characters are cut there
(marked "[cut for the sample]"), the `files` table is emptied. Run from this directory with the
data folder as argument: `python make_crush_sample.py ../../../../shared/data`.
"""

import gzip
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

MAIN = "5ee78d3f-abf5-487a-82f0-02cf36a0e8ee"
CHILD = "toolu_vrtx_01LWrvAJeVgibzAgkSFVDkVe"
CUT = 1500


def cut_parts(parts: str) -> str:
    import json

    out = json.loads(parts)
    for p in out:
        if p["type"] == "tool_result" and len(p["data"].get("content", "")) > CUT:
            p["data"]["content"] = p["data"]["content"][:CUT] + "\n[cut for the sample]"
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def main(data: Path) -> None:
    here = Path(__file__).resolve().parent / "crush"
    here.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src.db"
        shutil.copyfile(data / "crush/quay/crush.db", src)
        (Path(tmp) / "src.db-wal").write_bytes(gzip.decompress((data / "crush/quay/crush.db-wal.gz").read_bytes()))
        old = sqlite3.connect(src)
        schema = [r[0] for r in old.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'")]
        sessions = old.execute("SELECT * FROM sessions WHERE id IN (?, ?) ORDER BY created_at", (MAIN, CHILD)).fetchall()
        rows = {sid: old.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, rowid", (sid,)).fetchall()
                for sid in (MAIN, CHILD)}
        cols = [d[1] for d in old.execute("PRAGMA table_info(messages)")]
        old.close()
        db = Path(tmp) / "crush.db"
        new = sqlite3.connect(db)
        for sql in schema:
            if not sql.startswith("CREATE TRIGGER"):  # the triggers would recount message_count
                new.execute(sql)
        new.executemany(f"INSERT INTO sessions VALUES ({','.join('?' * len(sessions[0]))})", sessions)
        parts = cols.index("parts")

        def insert(conn: sqlite3.Connection, batch: list) -> None:
            conn.executemany(f"INSERT INTO messages ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                             [(*r[:parts], cut_parts(r[parts]), *r[parts + 1:]) for r in batch])
            conn.commit()

        insert(new, rows[MAIN])
        new.execute("VACUUM")
        new.execute("PRAGMA journal_mode = WAL")
        new.execute("PRAGMA wal_autocheckpoint = 0")
        insert(new, rows[CHILD][:7])
        # copy while the connection is open: closing it would checkpoint the WAL into the db
        shutil.copyfile(db, here / "crush.db")
        (here / "crush.db-wal.gz").write_bytes(gzip.compress((Path(tmp) / "crush.db-wal").read_bytes(), mtime=0))
        new.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
