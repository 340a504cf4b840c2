module github.com/sluicehq/sluice/connect/clickhousex

go 1.26.0

require (
	github.com/ClickHouse/clickhouse-go v1.5.4
	github.com/sluicehq/sluice v0.1.0
)

require (
	github.com/cloudflare/golz4 v0.0.0-20150217214814-ef862a3cdc58 // indirect
	github.com/stretchr/testify v1.8.0 // indirect
)
