#!/usr/bin/env python3
"""A TCP proxy that adds a fixed delay to every chunk the client sends, so
that a server on the loopback address answers as one across a network does
(a round trip of DELAY_MS more per request). For the remote cache's
benchmarks (BENCHMARKS.md, "The remote cache"): moto on 127.0.0.1 answers
in ~3 ms, a cloud bucket in 10-100 ms.

    scripts/latency_proxy.py LISTEN_PORT TARGET_HOST:TARGET_PORT DELAY_MS
"""
import asyncio
import sys


async def pipe(reader, writer, delay):
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            if delay:
                await asyncio.sleep(delay)
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    listen, target, delay_ms = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    host, port = target.rsplit(":", 1)
    delay = delay_ms / 1000.0

    async def serve(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(
            pipe(client_reader, server_writer, delay),
            pipe(server_reader, client_writer, 0.0),
        )

    server = await asyncio.start_server(serve, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
