// The dashboard's page, script and style, compiled in (dashboard_assets.cpp):
// nothing to install beside the binary but Chart.js, which Debian ships.
#pragma once

namespace braid::serve {

extern const char* const kIndexHtml;
extern const char* const kAppJs;
extern const char* const kAppCss;

}  // namespace braid::serve
