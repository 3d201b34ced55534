// The share's page and script (share_assets.cpp), compiled in: a device
// without braid needs nothing but a browser, and nothing comes from a CDN.
#pragma once

namespace braid::serve {

extern const char* const kShareHtml;
extern const char* const kShareJs;

}  // namespace braid::serve
