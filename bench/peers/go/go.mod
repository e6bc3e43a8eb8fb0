module fibra.bench/peers/go

go 1.21
