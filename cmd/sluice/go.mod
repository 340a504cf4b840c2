module github.com/sluicehq/sluice/cmd/sluice

go 1.26

require github.com/sluicehq/sluice v0.0.0

require go.uber.org/goleak v1.3.0 // indirect

replace github.com/sluicehq/sluice => ../..
