"""kcat job program: drives the kcat CLI (Debian's build, on Debian's librdkafka).

Usage: python kcat.py --kcat /usr/bin/kcat '<job json>'  (or the job on stdin); see README.md.

What the CLI allows, and so what this program can do:
- produce: one kcat run per group of consecutive records that share a partition and headers
  (`-p` and `-H` apply to a whole run); records without a partition go one per run, because
  kcat's delivery reports (`-vvv`: "delivered to partition P (offset O)") do not say which
  record they are for. Keys and values are split by random delimiters (`-K`, `-D`); `-Z`
  sends empty keys and values as null, so an empty non-null key or value cannot be sent.
  kcat cannot set record timestamps and does not print the acknowledged timestamp (-1).
- consume: `-J` output; JSON strings carry the raw bytes (undecodable ones pass through),
  which surrogateescape turns back into bytes.
- group_member: `kcat -G` commits with librdkafka's auto-commit (kcat has no way to commit
  one record), so a record is reported before its offset is committed; the committed offsets
  catch up within `auto.commit.interval.ms` (100 ms here), on a rebalance and on close.
  Assignments come from kcat's rebalance lines on stderr.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from itertools import groupby
from typing import Any

import jobio
from jobio import Deadline, Job, Result, b64, unb64

KCAT = "kcat"
DELIVERED = re.compile(rb"Message delivered to partition (-?\d+) \(offset (-?\d+)\)")
TIMESTAMP_TYPES = {"create": "CreateTime", "logappend": "LogAppendTime"}


class KcatFailed(Exception):
    pass


def error_name(exc: BaseException) -> str | None:
    return None


def properties(job: Job, extra: dict[str, Any]) -> list[str]:
    config = {**extra, **(job.get("config") or {})}
    return [arg for key, value in config.items() for arg in ("-X", f"{key}={value}")]


def producer_properties(job: Job, deadline: Deadline) -> dict[str, Any]:
    config: dict[str, Any] = {
        "acks": job.get("acks", "all"),
        "compression.codec": job.get("compression", "none"),
        "message.timeout.ms": max(1, deadline.remaining_ms()),
    }
    if job.get("idempotent") is not None:
        config["enable.idempotence"] = str(job["idempotent"]).lower()
    return config


def delimiter(records: list[dict[str, Any]]) -> bytes:
    """A random delimiter that occurs in none of the records' keys or values."""
    data = [unb64(r.get(field)) or b"" for r in records for field in ("key", "value")]
    while True:
        candidate = secrets.token_hex(8).encode()
        if not any(candidate in d for d in data):
            return candidate


def produce_run(
    job: Job, records: list[dict[str, Any]], deadline: Deadline
) -> list[dict[str, Any]]:
    key_delimiter, message_delimiter = delimiter(records), delimiter(records)
    if any(record.get("timestamp") is not None for record in records):
        raise KcatFailed("kcat cannot set record timestamps")
    argv = [KCAT, "-P", "-b", job["bootstrap"], "-t", job["topic"], "-Z", "-vvv"]
    argv += ["-K", key_delimiter.decode(), "-D", message_delimiter.decode()]
    if records[0].get("partition") is not None:
        argv += ["-p", str(records[0]["partition"])]
    for name, value in records[0].get("headers") or []:
        argv += ["-H", name if value is None else f"{name}={base64.b64decode(value).decode()}"]
    argv += properties(job, producer_properties(job, deadline))
    payload = message_delimiter.join(
        (unb64(r.get("key")) or b"") + key_delimiter + (unb64(r.get("value")) or b"")
        for r in records
    )
    done = subprocess.run(
        argv,
        input=payload,
        capture_output=True,
        timeout=deadline.remaining_ms() / 1000,
        check=False,
    )
    sys.stderr.buffer.write(done.stderr)
    delivered = DELIVERED.findall(done.stderr)
    if done.returncode != 0 or len(delivered) != len(records):
        raise KcatFailed(
            f"kcat exited with {done.returncode}: {done.stderr.decode(errors='replace')}"
        )
    return [{"partition": int(p), "offset": int(o), "timestamp": -1} for p, o in delivered]


def run_key(indexed: tuple[int, dict[str, Any]]) -> Any:
    """Records that may share one kcat run get equal keys."""
    index, record = indexed
    if record.get("partition") is None:
        return ("alone", index)
    return (record["partition"], json.dumps(record.get("headers") or []))


def produce(job: Job) -> Result:
    if job.get("transactional_id") is not None:
        return {
            "ok": False,
            "error": "kcat has no transactional producer",
            "error_name": "UNSUPPORTED_OP",
        }
    deadline = Deadline(job)
    results: list[dict[str, Any]] = []
    for _, run in groupby(enumerate(job["records"]), key=run_key):
        results += produce_run(job, [record for _, record in run], deadline)
    return {"ok": True, "results": results}


def raw(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogateescape")


def record_out(envelope: dict[str, Any]) -> dict[str, Any]:
    flat_headers = envelope.get("headers") or []
    headers = [
        [flat_headers[i], b64(raw(flat_headers[i + 1]))] for i in range(0, len(flat_headers), 2)
    ]
    return {
        "partition": envelope["partition"],
        "offset": envelope["offset"],
        "key": b64(raw(envelope.get("key"))),
        "value": b64(raw(envelope.get("payload"))),
        "headers": headers,
        "timestamp": envelope["ts"],
        "timestamp_type": TIMESTAMP_TYPES.get(envelope["tstype"]),
    }


def start_offset(start: Any) -> str:
    return {"earliest": "beginning", "latest": "end"}.get(start, str(start))


def consume(job: Job) -> Result:
    deadline = Deadline(job)
    group = job.get("group")
    config = {"isolation.level": job.get("isolation", "read_uncommitted")}
    argv = [KCAT, "-b", job["bootstrap"], "-J", "-u", "-q", "-c", str(job["count"])]
    if group is None:
        argv += ["-C", "-t", job["topic"], "-o", start_offset(job.get("from", "earliest"))]
        if job.get("partitions"):
            if len(job["partitions"]) != 1:
                raise KcatFailed("kcat consumes one partition or all of them")
            argv += ["-p", str(job["partitions"][0])]
    else:
        config["auto.offset.reset"] = "latest" if job.get("from") == "latest" else "earliest"
        argv += ["-G", group, job["topic"]]
    if job.get("keep_going"):
        argv.append("-E")  # kcat's default is to exit once all brokers are down
    argv += properties(job, config)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stdout, stderr = process.communicate(timeout=deadline.remaining_ms() / 1000)
    except subprocess.TimeoutExpired:
        process.terminate()  # a clean stop: kcat -G leaves its group and commits
        stdout, stderr = process.communicate()
    else:
        if process.returncode != 0:
            raise KcatFailed(
                f"kcat exited with {process.returncode}: {stderr.decode(errors='replace')}"
            )
    sys.stderr.buffer.write(stderr)
    lines = stdout.decode("utf-8", "surrogateescape").splitlines()
    records = [record_out(json.loads(line)) for line in lines if line.strip()]
    return {"ok": True, "records": records, "timed_out": len(records) < job["count"]}


# --- metadata (-L) and offsets by timestamp (-Q) -------------------------------------------


def kcat_json(job: Job, argv: list[str]) -> Any:
    """Run a kcat query with -J and return its JSON output."""
    deadline = Deadline(job)
    command = [KCAT, "-b", job["bootstrap"], "-J", *argv, *properties(job, {})]
    done = subprocess.run(
        command, capture_output=True, timeout=deadline.remaining_ms() / 1000, check=False
    )
    sys.stderr.buffer.write(done.stderr)
    if done.returncode != 0:
        raise KcatFailed(
            f"kcat exited with {done.returncode}: {done.stderr.decode(errors='replace')}"
        )
    return json.loads(done.stdout)


def broker_address(broker: dict[str, Any]) -> dict[str, Any]:
    host, _, port = broker["name"].rpartition(":")
    return {"id": broker["id"], "host": host, "port": int(port)}


def metadata(job: Job) -> Result:
    """`kcat -L`: no cluster id (kcat does not print it); topic errors as kcat words them."""
    argv = ["-L"]
    for topic in job.get("topics") or []:
        argv += ["-t", topic]
    listed = kcat_json(job, argv)
    return {
        "ok": True,
        "cluster_id": None,
        "controller": listed.get("controllerid", -1),
        "brokers": [broker_address(b) for b in listed["brokers"]],
        "topics": [
            {
                "name": t["topic"],
                "error": t.get("error"),
                "error_name": None,
                "partitions": [
                    {"partition": p["partition"], "leader": p["leader"]} for p in t["partitions"]
                ],
            }
            for t in listed["topics"]
        ],
    }


# kcat -Q takes librdkafka's logical offsets as timestamps: -1 the end, -2 the beginning.
LOGICAL_TIMESTAMPS = {"latest": -1, "earliest": -2}


def list_offsets(job: Job) -> Result:
    """`kcat -Q`: offsets by timestamp (librdkafka's offsets_for_times); no timestamps back,
    no isolation choice, no max_timestamp."""
    spec = job["spec"]
    timestamp = LOGICAL_TIMESTAMPS[spec] if isinstance(spec, str) else int(spec)
    partitions = job.get("partitions") or [
        p["partition"]
        for p in metadata({**job, "topics": [job["topic"]]})["topics"][0]["partitions"]
    ]
    argv = ["-Q"]
    for partition in partitions:
        argv += ["-t", f"{job['topic']}:{partition}:{timestamp}"]
    found = kcat_json(job, argv).get(job["topic"], {})
    offsets = []
    for partition in partitions:
        answer = found.get(str(partition), {})
        error = answer.get("error")
        offsets.append(
            {
                "partition": partition,
                "offset": answer.get("offset", -1),
                "timestamp": -1,
                "error": error,
                "error_name": None,
            }
        )
    return {"ok": True, "offsets": offsets}


# --- produce_paced: one record at a time, for a broker restart while a producer sends ---


def produce_paced(job: Job) -> Result:
    """One kcat run fed a line per record `interval_ms` apart (newline-delimited, so keys and
    values may not contain newlines). Records go to their `partition` if all name the same
    one, else to librdkafka's partitioner; results come in delivery order (kcat does not say
    which record a delivery report is for). `-E`: keep going while the broker is away."""
    deadline = Deadline(job)
    records = job["records"]
    key_delimiter = delimiter(records)
    argv = [KCAT, "-P", "-b", job["bootstrap"], "-t", job["topic"], "-Z", "-vvv", "-E"]
    argv += ["-K", key_delimiter.decode()]
    partitions = {r.get("partition") for r in records}
    if len(partitions) == 1 and None not in partitions:
        argv += ["-p", str(partitions.pop())]
    argv += properties(job, producer_properties(job, deadline))
    with tempfile.TemporaryFile() as log:  # a file: kcat may log more than a pipe holds
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=log)
        assert process.stdin is not None
        for record in records:
            line = (unb64(record.get("key")) or b"") + key_delimiter
            line += unb64(record.get("value")) or b""
            if b"\n" in line:
                raise KcatFailed("produce_paced sends one line per record: no newlines")
            process.stdin.write(line + b"\n")
            process.stdin.flush()
            time.sleep(job.get("interval_ms", 50) / 1000)
        try:
            process.communicate(timeout=deadline.remaining_ms() / 1000)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        log.seek(0)
        stderr = log.read()
    sys.stderr.buffer.write(stderr)
    delivered = DELIVERED.findall(stderr)
    if process.returncode != 0 or len(delivered) != len(records):
        raise KcatFailed(
            f"kcat exited with {process.returncode}: {stderr.decode(errors='replace')}"
        )
    return {
        "ok": True,
        "results": [{"partition": int(p), "offset": int(o), "timestamp": -1} for p, o in delivered],
    }


# --- group_member: a long-running group consumer (README.md) ---

REBALANCED = re.compile(r"% Group \S+ rebalanced.*?(assign|revoke)")
PARTITION = re.compile(r"\[(\d+)\]")


def report_assignments(stderr: Any) -> None:
    """Follow kcat's rebalance lines (eager "assigned: t [0], t [1]" / "revoked: ...", or
    cooperative "incremental assign of 2 partition(s) ...: t [0], t [1]")."""
    assigned: set[int] = set()
    for line in stderr:
        sys.stderr.write(line)
        rebalanced = REBALANCED.search(line)
        if rebalanced is None:
            continue
        partitions = {int(p) for p in PARTITION.findall(line.split("):", 1)[-1])}
        if rebalanced[1] == "assign":
            assigned |= partitions
        else:
            assigned -= partitions
        jobio.assigned(assigned)


def group_member(job: Job) -> Result:
    session_ms = job.get("session_timeout_ms", 10_000)
    config: dict[str, Any] = {
        "auto.offset.reset": "earliest",
        "auto.commit.interval.ms": 100,
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": max(session_ms // 5, 10),
        "partition.assignment.strategy": job.get("assignor", "range"),
        "topic.metadata.refresh.interval.ms": 500,
    }
    if job.get("instance_id"):
        config["group.instance.id"] = job["instance_id"]
    argv = [KCAT, "-b", job["bootstrap"], "-J", "-u", "-G", job["group"], job["topic"]]
    argv += properties(job, config)
    kcat = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="surrogateescape"
    )
    # SIGTERM stops kcat cleanly: it commits, leaves the group and exits.
    signal.signal(signal.SIGTERM, lambda *_: kcat.terminate())
    follower = threading.Thread(target=report_assignments, args=(kcat.stderr,), daemon=True)
    follower.start()
    assert kcat.stdout is not None
    for line in kcat.stdout:
        if line.strip():
            envelope = json.loads(line)
            jobio.consumed(envelope["partition"], envelope["offset"], raw(envelope.get("payload")))
    follower.join()
    if kcat.wait() != 0:
        raise KcatFailed(f"kcat exited with {kcat.returncode}")
    return {"ok": True}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--kcat"]:
        KCAT = sys.argv[2]
        del sys.argv[1:3]
    os.environ.setdefault("KCAT_CONFIG", os.devnull)
    jobio.serve(
        {
            "produce": produce,
            "produce_paced": produce_paced,
            "consume": consume,
            "metadata": metadata,
            "list_offsets": list_offsets,
            "group_member": group_member,
        },
        error_name,
    )
