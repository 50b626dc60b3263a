"""The six operations on runs (and the listing ones), one module each."""
