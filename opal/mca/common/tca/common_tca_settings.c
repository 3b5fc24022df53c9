/* common_tca_settings.c - see common_tca_settings.h. */
#include "common_tca_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "tca.h"

/* More than libtca has (tcaGetSettingInfo says how many). */
#define MAX_SETTINGS 64

/* The values live on the heap: ompi_info unloads a component's libraries
 * before the MCA base frees its variables' strings (as common_ucx does). */
static char **setting_values = NULL;
static int setting_index[MAX_SETTINGS];
static int setting_count = 0;
static int registered = 0;

static const char *source_words(mca_base_var_source_t source, const char *file) {
    static char buf[300];
    switch (source) {
    case MCA_BASE_VAR_SOURCE_COMMAND_LINE:
        return "on the command line";
    case MCA_BASE_VAR_SOURCE_ENV:
        return "by --mca or OMPI_MCA_*";
    case MCA_BASE_VAR_SOURCE_FILE:
        snprintf(buf, sizeof(buf), "in %s", NULL != file ? file : "a parameter file");
        return buf;
    case MCA_BASE_VAR_SOURCE_OVERRIDE:
        return "in Open MPI's override file";
    default:
        return "through MPI_T";
    }
}

/* Hands libtca each setting an MCA source set (and withdraws one that is
 * back at its default): libtca reads them when its device starts. */
static void give_settings_to_libtca(void) {
    for (int i = 0; i < setting_count; ++i) {
        tcaSettingInfo info;
        if (tcaSuccess != tcaGetSettingInfo(i, &info) || setting_index[i] < 0)
            continue;
        const char **value = NULL;
        mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
        const char *file = NULL;
        if (OPAL_SUCCESS != mca_base_var_get_value(setting_index[i], &value, &source, &file))
            continue;
        if (MCA_BASE_VAR_SOURCE_DEFAULT == source || NULL == value || NULL == *value) {
            (void) tcaSetSetting(info.variable, NULL, NULL);
            continue;
        }
        char given_by[400];
        snprintf(given_by, sizeof(given_by),
                 "MCA parameter btl_tca_%s (coll_tca_%s, opal_common_tca_%s; set %s)", info.name,
                 info.name, info.name, source_words(source, file));
        (void) tcaSetSetting(info.variable, *value, given_by);
    }
}

void mca_common_tca_settings_register(void) {
    if (NULL == setting_values) {
        setting_values = (char **) calloc(MAX_SETTINGS, sizeof(char *));
        if (NULL == setting_values)
            return;
    }
    tcaSettingInfo info;
    int i;
    for (i = 0; i < MAX_SETTINGS && tcaSuccess == tcaGetSettingInfo(i, &info); ++i) {
        /* Once per process: registering a variable again resets it to its
         * default and reads only its own name, losing a value set under a
         * synonym's. */
        if (!registered) {
            char help[1024];
            static const char *const clients[][3] = {{"opal", "btl", "tca"},
                                                     {"ompi", "coll", "tca"}};
            snprintf(help, sizeof(help), "%s (the environment variable %s where this is not set)",
                     info.help, info.variable);
            setting_values[i] = (char *) info.default_value; /* the MCA base copies it */
            setting_index[i] = mca_base_var_register(
                "opal", "opal_common", "tca", info.name, help, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0,
                (mca_base_var_info_lvl_t) (OPAL_INFO_LVL_1 + info.level - 1),
                MCA_BASE_VAR_SCOPE_READONLY, &setting_values[i]);
            /* Both clients' names at once: whichever starts the device
             * first (btl tca, before coll tca registers) reads them all. */
            for (size_t k = 0; setting_index[i] >= 0 && k < sizeof(clients) / sizeof(clients[0]);
                 ++k)
                (void) mca_base_var_register_synonym(setting_index[i], clients[k][0], clients[k][1],
                                                     clients[k][2], info.name, 0);
        }
    }
    registered = 1;
    setting_count = i;
    give_settings_to_libtca();
}

void mca_common_tca_settings_report(const char *client, int output) {
    if (opal_output_get_verbosity(output) < 5)
        return;
    for (int i = 0; i < setting_count; ++i) {
        tcaSettingInfo info;
        char value[256], given_by[400];
        if (tcaSuccess == tcaGetSettingInfo(i, &info) &&
            tcaSuccess ==
                tcaGetSetting(info.variable, value, sizeof(value), given_by, sizeof(given_by)) &&
            0 != strcmp(given_by, "default"))
            opal_output_verbose(5, output, "%s: setting %s = %s, from %s", client, info.name, value,
                                given_by);
    }
}
