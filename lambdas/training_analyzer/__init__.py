"""The training analyzer: jobs that wait on data, leave GPUs idle, checkpoint slowly, regress,
fail, or carry a straggler."""
