module github.com/sluicehq/sluice/cmd/sluice

go 1.26

require github.com/sluicehq/sluice v0.0.0

replace github.com/sluicehq/sluice => ../..
