# Seed 002: "The minimum: create, exec, read stdout", with AsyncSandbox
import asyncio
from pandastack import AsyncSandbox


async def main():
    sandbox = await AsyncSandbox.create(template="code-interpreter")

    result = await sandbox.exec("python -c 'print(2 ** 10)'")
    print(result.stdout)      # "1024\n"
    print(result.exit_code)   # 0
    assert result.stdout == "1024\n" and result.exit_code == 0  # check
    assert isinstance(result.duration_ms, int) and result.stderr == ""  # check

    await sandbox.kill()


asyncio.run(main())
