module github.com/chaoskit/chaoskit

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/spf13/afero v1.15.0
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.28.0
	pgregory.net/rapid v1.3.0
)

require golang.org/x/text v0.28.0 // indirect
