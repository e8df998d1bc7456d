module harness.test/goclient

go 1.23
