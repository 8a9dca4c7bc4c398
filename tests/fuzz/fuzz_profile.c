/* libFuzzer harness: a profile (INI) with every key of mpisim registered, as `mpisim run
 * --profile FILE` loads it; a loaded one must be writable as the reports write it. */
#include "fuzz_util.h"
#include "ms_driver.h"
#include "netmodel.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    const char *path = fuzz_file(data, len, ".ini");
    nm_config *cfg = nm_config_create();
    if (!cfg) return 0;
    char err[1024] = "";
    if (ms_driver_register_keys(cfg, err, sizeof err) != 0) abort();
    if (nm_config_load_profile(cfg, path, "", err, sizeof err) == 0) {
        FILE *devnull = fopen("/dev/null", "w");
        if (devnull) {
            nm_config_write_json(cfg, devnull, 0);
            fclose(devnull);
        }
    } else {
        fuzz_check_error(err, NULL);
    }
    nm_config_destroy(cfg);
    return 0;
}
