# Seed 002: "Pass check=True to raise CommandFailed on a non-zero exit", with AsyncSandbox
import asyncio
from pandastack import AsyncSandbox, CommandFailed


async def main():
    sandbox = await AsyncSandbox.create(template="code-interpreter")
    result = await sandbox.exec("sh -c 'echo oops >&2; exit 3'")
    assert result.exit_code == 3 and result.stderr == "oops\n"  # check
    try:
        await sandbox.exec("sh -c 'exit 3'", check=True)
        raise SystemExit("check=True did not raise")  # check
    except CommandFailed as e:
        assert e.result.exit_code == 3  # check: the failure carries its result
    await sandbox.kill()


asyncio.run(main())
