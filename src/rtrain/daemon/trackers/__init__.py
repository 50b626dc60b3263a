"""What the trackers people already use need from the daemon: TensorBoard on a host."""
