"""The KRaft metadata quorum's voters, as DescribeQuorum shows them and AddRaftVoter and
RemoveRaftVoter (KIP-853) change them.

minibroker has no metadata log: the quorum is what admin tools see of it. Under `kraft.version`
0 it is a static quorum of one voter, the controller (the lowest live node id), with no
directory id (static voters have none); the other live nodes are observers. Once
`kraft.version` is 1 (UpdateFeatures, KIP-1160 in Kafka 4.1) the voter set is dynamic: it
starts as the controller of that moment, with its directory id, and AddRaftVoter and
RemoveRaftVoter change it as Kafka's `AddVoterHandler` and `RemoveVoterHandler` do. The leader
is then the lowest live voter (Kafka elects one of the voters); each change of leader bumps
the leader epoch, and each voter change appends one VotersRecord to the (notional) metadata
log, whose end offset is the high watermark. The dynamic voter set, the leader epoch and that
offset are kept in `<data dir>/minibroker-quorum.json` (Kafka keeps them in the metadata log),
so a restart keeps them; an in-memory broker keeps them in memory.

Each node's directory id (Kafka: the metadata log directory's `directory.id` in
meta.properties) is derived from the cluster id and node id, so it is stable across restarts.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minibroker.log.checkpoints import write_atomically
from minibroker.protocol.errors import ErrorCode

QUORUM_FILE = "minibroker-quorum.json"

NO_DIRECTORY_ID = uuid.UUID(int=0)
NULL_DIRECTORY_IDS = (None, NO_DIRECTORY_ID)  # the codec reads the all-zero uuid as None
_DIRECTORY_NAMESPACE = uuid.UUID("5d6f6a3e-4c1b-4bb5-9a52-6b7f0f0c6e3a")
RECONFIG_KRAFT_VERSION = 1  # kraft.version from which the voter set can change (KIP-853)


def directory_id(cluster_id: str, node_id: int) -> uuid.UUID:
    """The node's metadata log directory id."""
    return uuid.uuid5(_DIRECTORY_NAMESPACE, f"{cluster_id}/{node_id}")


def java_uuid(value: uuid.UUID) -> str:
    """A Uuid as Kafka's `Uuid.toString` writes it (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Voter:
    node_id: int
    directory_id: uuid.UUID
    # None: the node's own listeners (the voter the dynamic quorum started from)
    endpoints: tuple[Endpoint, ...] | None

    def key(self) -> str:
        """Kafka's `ReplicaKey.toString`."""
        return replica_key(self.node_id, self.directory_id)


def replica_key(node_id: int, directory: uuid.UUID) -> str:
    optional = (
        "Optional.empty" if directory == NO_DIRECTORY_ID else f"Optional[{java_uuid(directory)}]"
    )
    return f"ReplicaKey(id={node_id}, directoryId={optional})"


def endpoints_text(endpoints: Iterable[Endpoint]) -> str:
    """Kafka's `Endpoints.toString` of endpoints given in a request (unresolved addresses)."""
    inner = ", ".join(f"ListenerName({e.name})={e.host}/<unresolved>:{e.port}" for e in endpoints)
    return f"Endpoints(endpoints={{{inner}}})"


@dataclass(frozen=True, slots=True)
class Change:
    error: ErrorCode = ErrorCode.NO_ERROR
    message: str | None = None


class MetadataQuorum:
    def __init__(self, cluster_id: str, path: Path | None = None) -> None:
        self.cluster_id = cluster_id
        self.dynamic_voters: dict[int, Voter] | None = None
        self.leader_epoch = 1
        self.end_offset = 0
        self._leader: int | None = None
        self._path = path

    @classmethod
    def open(cls, cluster_id: str, data_dir: Path | None) -> MetadataQuorum:
        quorum = cls(cluster_id, None if data_dir is None else data_dir / QUORUM_FILE)
        if quorum._path is not None and quorum._path.exists():
            stored = json.loads(quorum._path.read_text())
            quorum.leader_epoch = int(stored["leader_epoch"])
            quorum.end_offset = int(stored["end_offset"])
            quorum.dynamic_voters = {
                int(entry["id"]): _voter_of(entry) for entry in stored["voters"]
            }
        return quorum

    def _store(self) -> None:
        if self._path is None or self.dynamic_voters is None:
            return
        content = {
            "leader_epoch": self.leader_epoch,
            "end_offset": self.end_offset,
            "voters": [_entry_of(voter) for _, voter in sorted(self.dynamic_voters.items())],
        }
        write_atomically(self._path, json.dumps(content, indent=1))

    def directory_of(self, node_id: int) -> uuid.UUID:
        return directory_id(self.cluster_id, node_id)

    def voters(self, kraft_version: int, controller_id: int) -> list[Voter]:
        """The voters, by node id; from kraft.version 1 the dynamic set (made on first use)."""
        if kraft_version < RECONFIG_KRAFT_VERSION:
            return [Voter(controller_id, NO_DIRECTORY_ID, None)]
        if self.dynamic_voters is None:
            first = Voter(controller_id, self.directory_of(controller_id), None)
            self.dynamic_voters = {controller_id: first}
            self._store()
        return [self.dynamic_voters[node_id] for node_id in sorted(self.dynamic_voters)]

    def leader(self, voters: list[Voter], live: set[int]) -> int:
        """The lowest live voter (else the lowest voter); a new leader bumps the epoch."""
        ids = [voter.node_id for voter in voters]
        chosen = min((node_id for node_id in ids if node_id in live), default=min(ids))
        if self._leader is not None and chosen != self._leader:
            self.leader_epoch += 1
            self._store()
        self._leader = chosen
        return chosen

    # ---- AddRaftVoter / RemoveRaftVoter -----------------------------------------------------

    def add(
        self,
        kraft_version: int,
        controller_id: int,
        voter: Voter,
        caught_up: bool,
    ) -> Change:
        """Kafka's AddVoterHandler, after the request's own checks: `caught_up` is whether the
        new voter is an observer fetching with that directory id (a live node here)."""
        if kraft_version < RECONFIG_KRAFT_VERSION:
            return Change(
                ErrorCode.UNSUPPORTED_VERSION,
                "Cluster doesn't support adding voter because the kraft.version feature is "
                f"{kraft_version}",
            )
        voters = self.voters(kraft_version, controller_id)
        if voter.node_id in {v.node_id for v in voters}:
            return Change(
                ErrorCode.DUPLICATE_VOTER,
                f"The voter id for {voter.key()} is already part of the set of voters "
                f"{_key_set(voters)}.",
            )
        if not caught_up:
            return Change(
                ErrorCode.REQUEST_TIMED_OUT,
                f"Aborted add voter operation for {voter.key()} since it is lagging behind",
            )
        assert self.dynamic_voters is not None
        self.dynamic_voters[voter.node_id] = voter
        self.end_offset += 1
        self._store()
        return Change()

    def remove(
        self, kraft_version: int, controller_id: int, node_id: int, directory: uuid.UUID
    ) -> Change:
        """Kafka's RemoveVoterHandler: the voter must be in the set with that directory id,
        and not be its last member."""
        if kraft_version < RECONFIG_KRAFT_VERSION:
            return Change(
                ErrorCode.UNSUPPORTED_VERSION,
                "Cluster doesn't support removing voter because the kraft.version feature is "
                f"{kraft_version}",
            )
        voters = self.voters(kraft_version, controller_id)
        current = next((v for v in voters if v.node_id == node_id), None)
        if current is None or current.directory_id != directory or len(voters) == 1:
            return Change(
                ErrorCode.VOTER_NOT_FOUND,
                f"Cannot remove voter {replica_key(node_id, directory)} from the set of voters "
                f"{_key_set(voters)}",
            )
        assert self.dynamic_voters is not None
        del self.dynamic_voters[node_id]
        self.end_offset += 1
        self._store()
        return Change()


def _key_set(voters: list[Voter]) -> str:
    return "[" + ", ".join(voter.key() for voter in voters) + "]"


def _entry_of(voter: Voter) -> dict[str, Any]:
    endpoints = (
        None if voter.endpoints is None else [[e.name, e.host, e.port] for e in voter.endpoints]
    )
    return {"id": voter.node_id, "directory_id": str(voter.directory_id), "endpoints": endpoints}


def _voter_of(entry: dict[str, Any]) -> Voter:
    endpoints = entry["endpoints"]
    return Voter(
        int(entry["id"]),
        uuid.UUID(entry["directory_id"]),
        None
        if endpoints is None
        else tuple(Endpoint(str(n), str(h), int(p)) for n, h, p in endpoints),
    )
