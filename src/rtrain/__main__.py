"""`python -m rtrain` is the `rtrain` command."""

from rtrain.client.entry import main

main()
