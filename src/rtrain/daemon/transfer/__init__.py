"""The transfer engine: every byte between the daemon and a host, for start, fetch and the
shipping of code trees. Large files are striped over several channels of the host's one
connection, inputs are kept on the host by sha256 so none is sent twice, and a cut transfer
resumes from its verified pieces. Every byte is checked by sha256 end to end, and nothing is
ever under its final name before it is whole and verified. See docs/architecture.md."""
