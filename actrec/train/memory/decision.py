"""What `choose_batch` decided (BatchDecision): the numbers, the probes and their table."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from actrec.config.recipe import Recipe
from actrec.train.memory.probe import ProbeResult
from actrec.train.memory.recipe_edits import with_decided_values
from actrec.train.memory.step_time import StepTimeModel, throughput
from actrec.train.memory.units import format_bytes


@dataclass(frozen=True)
class BatchDecision:
    """What `choose_batch` decided and the measurements it decided from.

    per_replica_batch: the chosen per-replica batch b: the micro-batch limit of the resolved
        recipe (max_per_replica_batch=auto: the largest limit <= the probed choice that
        every epoch's share splits under).
    probed_choice: the probed batch the throughput model chose.
    batch_size / max_per_replica_batch / lr_reference_batch: the resolved train values.
    learning_rate: the coupled rate at the starting global batch (before warm-up / decay).
    micro_batch / accumulation_steps: of the first epoch.
    """

    per_replica_batch: int
    probed_choice: int
    num_replicas: int
    device: str
    budget_bytes: int | None
    probes: tuple[ProbeResult, ...]
    model: StepTimeModel
    batch_size: int
    max_per_replica_batch: int | None
    lr_reference_batch: int | None
    learning_rate: float
    micro_batch: int
    accumulation_steps: int
    auto_fields: tuple[str, ...]
    remat: bool
    probe_seconds: float = 0.0

    def apply(self, recipe: Recipe) -> Recipe:
        """`recipe` with the decided numbers in place of auto."""
        values = {
            "batch_size": self.batch_size,
            "max_per_replica_batch": self.max_per_replica_batch,
        }
        return with_decided_values(recipe, values)

    def rows(self) -> list[dict]:
        """One row per probed batch, in batch order, for a table."""
        rows = []
        for probe in sorted(self.probes, key=lambda p: p.batch):
            modelled = self.model.step_seconds(probe.batch) if probe.fits else None
            rows.append(
                {
                    "batch": probe.batch,
                    # a probe stopped over budget was stopped when its peak passed it
                    "peak": (">" if probe.reason == "over budget" else "")
                    + format_bytes(probe.peak_bytes),
                    "fits": "yes" if probe.fits else f"no ({probe.reason})",
                    "step_ms": None if probe.step_seconds is None else 1000 * probe.step_seconds,
                    "model_ms": None if modelled is None else 1000 * modelled,
                    "clips_per_second": throughput(probe, self.model) if probe.fits else None,
                    "chosen": probe.batch == self.probed_choice,
                }
            )
        return rows

    def summary(self) -> str:
        """One sentence: the chosen batch, the global batch and the learning rate."""
        budget = format_bytes(self.budget_bytes) if self.budget_bytes else "the device memory"
        accumulation = (
            f" = {self.micro_batch} clips x {self.accumulation_steps} accumulation steps"
            if self.accumulation_steps > 1
            else ""
        )
        return (
            f"per-replica batch {self.per_replica_batch} (largest that fits {budget}: "
            f"{max((p.batch for p in self.probes if p.fits), default=0)}; step time model "
            f"{self.model.describe()}); global batch "
            f"{self.batch_size} on {self.num_replicas} replica(s){accumulation}; "
            f"lr {self.learning_rate:.4g}"
        )

    def to_json(self) -> dict:
        values = dataclasses.asdict(self)
        values["probes"] = [probe.to_json() for probe in self.probes]
        values["auto_fields"] = list(self.auto_fields)
        return values
