"""The Ray that `actrec prepare --executor ray` starts on this machine (no --address):
listening on loopback only, with Ray's token authentication on (docs/cluster.md).

On Linux Ray gives its node the machine's address, even when told 127.0.0.1
(`_node_ip_address` is resolved to a "remotely reachable" address), and its GCS, raylet,
object manager and every worker's gRPC server then listen on all interfaces. The local-only
mode Ray uses on macOS and Windows (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, read once, when
`ray` is imported) keeps the node on 127.0.0.1, and every one of those servers listens there
(measured with Ray 2.52.0 and 2.60.0; tests/data/test_prepare_ray.py checks the installed
Ray). Ray reads these settings once, so a process that imported Ray without them is refused
a local Ray, and one that imported Ray with them would give a remote cluster it then joins
127.0.0.1 as its address: `actrec prepare` does one or the other. Token
authentication (Ray >= 2.52, RAY_AUTH_MODE=token) uses a new random token per run, given to
Ray's processes in their environment, so nothing is written to ~/.ray. Joining a cluster is
only ever by an explicit --address, which none of this touches.
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import warnings

from actrec.errors import ClusterError

LOOPBACK = "127.0.0.1"
LOCAL_OBJECT_STORE_BYTES = 128 * 1024 * 1024
"""The object store of a Ray started on this machine: the results in flight (a few MB per
video); Ray spills to disk beyond it rather than taking a share of the memory."""
DOCS = "docs/cluster.md"
_TOKEN = secrets.token_hex(32)  # 256 bits, as `ray get-auth-token`; one per process, as
# Ray's C++ side keeps the first token it reads
_started = False  # whether this process imported Ray in local_ray_environment()


def local_ray_environment() -> dict[str, str]:
    """The environment of a local Ray: loopback only, token authentication. Set before `ray`
    is imported: Ray reads these once, when it is imported."""
    return {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # the node's address: 127.0.0.1
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": _TOKEN,
    }


def refuse_ray_imported_before() -> None:
    """ClusterError when this process imported Ray other than for a local Ray: it read its
    settings then, and would listen on the machine's address, without a token."""
    if sys.modules.get("ray") is not None and not _started:
        raise ClusterError(
            "Ray was imported in this process before actrec could start it on loopback with "
            "a token: run `actrec prepare --executor ray` (or RayExecutor without an "
            f"address) in a process of its own, before anything imports Ray ({DOCS})"
        )


def start_local_ray(ray, workers: int) -> None:
    """ray.init of a new Ray of our own ("local": never one found on the machine) on
    loopback, with `workers` CPUs; warns in one line when its node is not on loopback
    (a Ray that ignores local_ray_environment())."""
    global _started
    _started = True  # `ray` was imported in local_ray_environment()
    ray.init(
        address="local",
        num_cpus=workers,
        object_store_memory=LOCAL_OBJECT_STORE_BYTES,
        include_dashboard=False,
        dashboard_host=LOOPBACK,
        _node_ip_address=LOOPBACK,
        logging_level=logging.WARNING,
    )
    node = ray.util.get_node_ip_address()
    if node != LOOPBACK:
        warnings.warn(
            f"the local Ray listens on {node}, not only on {LOOPBACK}: this Ray "
            f"({ray.__version__}) does not keep a local node on loopback ({DOCS})",
            stacklevel=2,
        )


class EnvironmentSet:
    """os.environ updated with `values` until `restore()` puts back what was there."""

    def __init__(self, values: dict[str, str]):
        self._before = {name: os.environ.get(name) for name in values}
        os.environ.update(values)

    def restore(self) -> None:
        for name, value in self._before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
