"""The workers of a training job and the cluster they run on (each name imported from its
module):

    strategy.py      the tf.distribute strategy and the cluster it belongs to (TF_CONFIG,
                     Slurm); the one place the library reads the environment for distribution
    collectives.py   small agreements between the workers: one all-reduce each
    launch.py        `actrec launch`: N local worker processes, started and supervised
    restarts.py      `actrec launch --restarts N`: the workers started again with --resume
    worker_loss.py   a lost worker said in one message instead of a TensorFlow traceback
    preemption.py    SIGTERM (a scheduler's preemption): checkpoint at the next step, stop
    optional_imports.py  what TensorFlow and Keras import at start-up that the processes
                     actrec starts decline (the console script, a batch-size probe, a
                     card's check)

The training step and the run's life are actrec.train's; launch.py and restarts.py import
no TensorFlow.
"""
