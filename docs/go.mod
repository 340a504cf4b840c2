module github.com/sluicehq/sluice/docs

go 1.26.0

require (
	github.com/sluicehq/sluice v0.1.0
	go.uber.org/goleak v1.3.0
)
