# Seed 000: "One-shot exec", with AsyncSandbox
import asyncio
from pandastack import AsyncSandbox


async def main():
    sandbox = await AsyncSandbox.create(template="code-interpreter", ttl_seconds=3600)
    result = await sandbox.exec('python -c "print(2 + 2)"', timeout_seconds=30)
    print(result.stdout)  # "4\n"
    assert result.stdout == "4\n"  # check
    await sandbox.kill()


asyncio.run(main())
