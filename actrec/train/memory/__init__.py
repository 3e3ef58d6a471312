"""Choosing the per-replica batch by probing memory and throughput.

Guo et al. (PPoPP 2019) show that memory limits a deep network's depth and batch, and that
the batch and learning rate should be chosen, after memory-saving measures such as
rematerialisation (`model.remat`, actrec.models.remat), from a performance model instead of
by trial and error. `train.batch_size: auto` (`actrec train --batch-size auto`) does that
when a run starts:

1. Probe. Each candidate per-replica batch b runs in a FRESH Python process
   (`python -m actrec.train.memory`, fed a JSON request) that builds the recipe's model and
   optimizer exactly as training does (random weights: the ImageNet file changes no
   memory) and runs 1 + `steps` training steps on a synthetic batch of b clips:
   - CPU: the memory is the probe process's peak resident set size (VmHWM on Linux; it
     counts TensorFlow itself, the weights, the optimizer state, the traced graph and the
     activations: what the kernel's out-of-memory killer sees). The peak never goes down,
     and an allocator keeps freed memory for reuse, so probes in one process would see each
     other's peaks and leftovers: one process per probe measures each batch alone, and
     nothing leaks from one probe into the next. (Not `ru_maxrss`: Linux carries the
     parent's resident size at fork into an exec'd child's `ru_maxrss`.) A watchdog thread
     stops a probe as soon as its peak passes the budget.
   - GPU: the probe process limits its first GPU to the budget (a logical device with
     `memory_limit`; no limit when no budget is given) and an out-of-memory error
     (`tf.errors.ResourceExhaustedError`) means "does not fit"; the peak is TensorFlow's
     allocator peak (`tf.config.experimental.get_memory_info`). The training process turns
     on memory growth before it creates its strategy so that it does not hold the GPU
     while the probes run.
   Candidates are b = 1, 2, 4, ... up to a cap (the share of train.max_batch_size, a numeric
   train.max_per_replica_batch, the training videos per replica, `MAX_PROBED_BATCH`),
   stopping at the first that does not fit, then bisection between the largest batch that
   fits and the smallest that does not, to within an eighth.
2. Model. The step times t(b) (median of the timed steps) of the batches that fit are fitted
   with t(b) = a + c b (Theil-Sen: the median of the pairwise slopes, so that one batch
   slowed down by memory pressure does not bend the line): a is the per-step overhead
   (kernel launches, the optimizer update, the gradient all-reduce), c the time per clip.
   A batch's throughput is b / max(measured t(b), modelled t(b)): the model smooths timing
   noise, the measurement exposes a batch that runs slower than the model predicts (memory
   pressure near the limit, slower convolution algorithms). The chosen per-replica batch is
   the LARGEST batch within `THROUGHPUT_TOLERANCE` of the best throughput (fewer
   accumulation steps, more room for the adaptive schedule). A chosen batch whose epochs
   the schedule cannot split (actrec.train.schedule.micro_batching) gives way to the next.
3. Recipe. batch_size=auto: the starting global batch is b times the replicas,
   max_per_replica_batch becomes b (a growing schedule reaches its larger batches by
   gradient accumulation), and the learning rate follows train.lr_coupling from
   train.lr_reference_batch. max_per_replica_batch=auto: the schedule stays, b is the
   micro-batch limit above which accumulation makes up a replica's share.
   `BatchDecision.apply` writes the numbers into the recipe; the run directory's
   recipe.yaml holds them, so a resumed run trains with the same batch without probing.

Multi-worker: only the chief probes (before the workers build their models); the numbers
reach every worker through one all-reduce (actrec.train.memory.auto_batch), so all workers
agree. The chief's machine stands for all: the workers are assumed to have the same accelerators.

Limits of the measurement: the probe feeds a batch held in memory, so the input pipeline's
buffers (shuffle_buffer whole videos, prefetching) are not in the CPU peak; the default CPU
budget (`DEFAULT_CPU_BUDGET_FRACTION` of the memory available) leaves room for them. With
several workers on one machine give each a share with --memory-budget.

Host-memory offload: TensorFlow 2.21 has no general mechanism to move activations kept for
the backward pass to host memory. `tf.while_loop(swap_memory=True)` swaps only a loop's
per-iteration tensors between GPU and host (the accumulation loop in
actrec.train.loop.step would swap micro-batch gradients, which are needed at once, not
activations), and on a CPU-only machine activations already are in host memory: there is
nothing to offload. What actrec does instead: rematerialisation (less to keep), gradient
accumulation (a smaller micro-batch) and GPU memory growth while probing.

Nothing here imports TensorFlow at module level.
"""
