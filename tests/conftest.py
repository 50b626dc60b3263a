pytest_plugins = ["tests.hosts.fixtures", "tests.daemon_fixtures"]
