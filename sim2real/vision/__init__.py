"""Box poses from a camera: AprilTags on the box, detected and solved for the box's pose.

``camera`` (pinhole intrinsics as CameraInfo holds them), ``tags`` (the tag family and where each tag sits
on the box), ``detect`` (OpenCV's AprilTag detector), ``pose`` (PnP with flips refused), ``estimate`` (the
box pose in the arm base frame from one image, and the tally of images that gave none), ``render`` (a
synthetic camera for the stand-in) and ``handeye`` (the camera's pose in the arm base frame).
"""
