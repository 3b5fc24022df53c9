/* common_tca_settings.h - libtca's settings (tcaGetSettingInfo: the device,
 * the copy path, timeouts, the timing model ...) as Open MPI MCA parameters,
 * the way opal/mca/common/ucx shares its own: each one registered once as
 * opal_common_tca_<name>, with the synonyms btl_tca_<name> and
 * coll_tca_<name>, so ompi_info --param btl tca (and coll tca) shows them and
 * --mca, OMPI_MCA_* and parameter files set them under any of the three.
 *
 * One precedence for every setting: an MCA parameter that was set (under any
 * of its names, from any source) wins over the TCA_* environment variable,
 * which wins over the default.  TCA programs, which have no MCA, keep the
 * TCA_* variables. */
#ifndef MCA_COMMON_TCA_SETTINGS_H
#define MCA_COMMON_TCA_SETTINGS_H

#include "opal_config.h"

#include "opal/mca/mca.h"
#include "session/session_core.h"

BEGIN_C_DECLS

/* From each component's register function (the first call registers).
 * Also hands libtca the values set, so every libtca call after it reads
 * them. */
TCA_SESSION_API void mca_common_tca_settings_register(void);

/* At verbosity 5 on `output`: a line per setting that is not at its default,
 * with who set it. */
TCA_SESSION_API void mca_common_tca_settings_report(const char *client, int output);

END_C_DECLS

#endif
