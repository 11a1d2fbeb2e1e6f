module socialrouter/sdk/go

go 1.23
